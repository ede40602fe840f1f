package responses

import (
	"encoding/json"
	"fmt"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// toolFields are the fields of a tool object, with the first value of
// the wrong type for each field. encoding/json read a tool in steps (its
// type, name and tools; then a function's or a custom tool's own
// fields), each answering the first wrong value of its fields: which
// step's answer is the refusal depends on the tool's type, known once
// the tool is walked.
type toolFields struct {
	// got is what the tool is when not an object ("string", "null"…),
	// "" for an object.
	got                                    string
	typ, name, desc                        string
	params                                 json.RawMessage
	strict                                 *bool
	format                                 bool // a format object was read (its fields below)
	formatType, formatSyntax, formatDefine string
	// members are a namespace's tools; hasMembers says "tools" was an
	// array (not absent or null).
	members    []toolFields
	hasMembers bool
	// errs is the first value of the wrong type of each field (toolType…),
	// at; n counts the members read.
	errs [toolFieldCount]*Error
	at   [toolFieldCount]int
	n    int
}

// The fields of a tool, as toolNames names them.
const (
	toolType = iota
	toolName
	toolTools
	toolDesc
	toolParams
	toolStrict
	toolFormat
	toolFieldCount
)

var (
	toolNames         = []string{"type", "name", "tools", "description", "parameters", "strict", "format"}
	customFormatNames = []string{"type", "syntax", "definition"}
)

// first is the first of the fields' type errors in the body's order.
func (t *toolFields) first(fields ...int) *Error {
	var e *Error
	at := 0
	for _, f := range fields {
		if t.errs[f] != nil && (e == nil || t.at[f] < at) {
			e, at = t.errs[f], t.at[f]
		}
	}
	return e
}

// fail keeps e as field f's type error unless it has one.
func (t *toolFields) fail(f int, e *Error) {
	if e != nil && t.errs[f] == nil {
		t.errs[f], t.at[f] = e, t.n
	}
}

// readTools reads tools where w is: Request.Tools, and the function
// tools into dc.tools (functionTools' refusal, if any).
func (dc *decoder) readTools(w *jsonscan.Walker) {
	r := &dc.d.Request
	dc.tools.err, dc.tools.fns = nil, nil
	switch w.First() {
	case '[':
	default:
		w.Skip()
		switch v := w.Val(); {
		case v == "":
		case v == "null":
			r.Tools = nil
		default:
			dc.top = typeError("tools", "an array", kind(v))
		}
		return
	}
	r.Tools = []json.RawMessage{}
	tw := w.Walk()
	for i := 0; tw.Member(); i++ {
		start := tw.At()
		var t toolFields
		dc.tool(&tw, &t, func() string { return fmt.Sprintf("tools[%d]", i) }, true)
		end := tw.At()
		if end < 0 {
			break
		}
		r.Tools = append(r.Tools, dc.raw(dc.s[start:end]))
		if dc.tools.err == nil {
			dc.tools.err = dc.functionTools(fmt.Sprintf("tools[%d]", i), &t)
		}
	}
	w.Resume(tw.At())
}

// tool reads the tool where w is into t: its members too when top (a
// tool of tools, not of a namespace). param is the tool's path, made
// only for an error.
func (dc *decoder) tool(w *jsonscan.Walker, t *toolFields, param func() string, top bool) {
	if w.First() != '{' {
		w.Skip()
		if v := w.Val(); v != "" {
			t.got = kind(v)
		}
		return
	}
	tw := w.Walk()
	for tw.Member() {
		t.n++
		f := field(tw.Key(), toolNames)
		if f == toolTools && top && tw.First() == '[' {
			t.members, t.hasMembers = t.members[:0], true
			mw := tw.Walk()
			for j := 0; mw.Member(); j++ {
				var m toolFields
				dc.tool(&mw, &m, func() string { return fmt.Sprintf("%s.tools[%d]", param(), j) }, false)
				t.members = append(t.members, m)
			}
			tw.Resume(mw.At())
			continue
		}
		tw.Skip()
		v := tw.Val()
		if v == "" {
			break
		}
		path := func(name string) string { return param() + "." + name }
		switch f {
		case toolType:
			if e := str("", v, &t.typ); e != nil {
				t.fail(f, typeError(path("type"), "a string", kind(v)))
			}
		case toolName:
			if e := str("", v, &t.name); e != nil {
				t.fail(f, typeError(path("name"), "a string", kind(v)))
			}
		case toolTools:
			switch {
			case !top:
			case v == "null":
				t.members, t.hasMembers = nil, false
			default:
				t.fail(f, typeError(path("tools"), "an array", kind(v)))
			}
		case toolDesc:
			if e := str("", v, &t.desc); e != nil {
				t.fail(f, typeError(path("description"), "a string", kind(v)))
			}
		case toolParams:
			t.params = dc.raw(v)
		case toolStrict:
			if e := boolPtr("", v, &t.strict); e != nil {
				t.fail(f, typeError(path("strict"), "a boolean", kind(v)))
			}
		case toolFormat:
			if v == "null" {
				t.format = false
				break
			}
			if !t.format {
				t.format, t.formatType, t.formatSyntax, t.formatDefine = true, "", "", ""
			}
			t.fail(f, object(path("format"), v, customFormatNames, func(i int, v string) *Error {
				switch i {
				case 0:
					return str(path("format.type"), v, &t.formatType)
				case 1:
					return str(path("format.syntax"), v, &t.formatSyntax)
				}
				return str(path("format.definition"), v, &t.formatDefine)
			}))
		}
	}
	w.Resume(tw.At())
}

// functionTools reads a tool of tools into dc.tools.fns: function tools
// as they are; a namespace tool's functions, each with its Namespace; a
// custom tool as Custom. A built-in tool (web_search, tool_search,
// file_search, code_interpreter, image_generation, computer_use, mcp,
// shell…) has no chat completions equivalent: it goes to a native
// Responses API and is left out of a translated request, never refused
// (Codex declares web_search on every request); only tool_choice forcing
// one needs a native Responses API (decodeToolChoice).
func (dc *decoder) functionTools(param string, t *toolFields) *Error {
	switch t.got {
	case "", "null":
	default:
		return typeError(param, "an object", t.got)
	}
	if e := t.first(toolType, toolName, toolTools); e != nil {
		return e
	}
	switch t.typ {
	case "function", "custom":
		return dc.functionTool(param, t, "")
	case "namespace":
		if t.name == "" {
			return BadRequest(param+".name", "missing required parameter: '%s.name'", param)
		}
		for j := range t.members {
			if e := dc.functionTool(fmt.Sprintf("%s.tools[%d]", param, j), &t.members[j], t.name); e != nil {
				return e
			}
		}
	case "":
		return BadRequest(param+".type", "missing required parameter: '%s.type'", param)
	}
	return nil
}

// functionTool reads one function or custom tool (of namespace ns, ""
// none) into dc.tools.fns; a namespace's member of another type is left
// out, as a built-in tool is.
func (dc *decoder) functionTool(param string, t *toolFields, ns string) *Error {
	switch t.got {
	case "", "null":
	default:
		return typeError(param, "an object", t.got)
	}
	if e := t.first(toolType); e != nil {
		return e
	}
	var ft wire.FunctionTool
	switch t.typ {
	case "function":
		if e := t.first(toolType, toolName, toolDesc, toolStrict); e != nil {
			return e
		}
		ft = wire.FunctionTool{Type: t.typ, Name: t.name, Description: t.desc, Parameters: t.params, Strict: t.strict}
		if isNull(ft.Parameters) {
			ft.Parameters = nil
		}
	case "custom":
		if e := t.first(toolName, toolDesc, toolFormat); e != nil {
			return e
		}
		ft = wire.FunctionTool{Type: "function", Name: t.name, Description: t.desc, Custom: true}
		if t.format && t.formatType == "grammar" {
			ft.Grammar = t.formatSyntax + " grammar:\n" + t.formatDefine
		}
	default:
		return nil
	}
	if ft.Name == "" {
		return BadRequest(param+".name", "missing required parameter: '%s.name'", param)
	}
	ft.Namespace = ns
	dc.tools.fns = append(dc.tools.fns, ft)
	return nil
}

var (
	choiceFields     = []string{"type", "name", "namespace", "mode", "tools"}
	choiceToolFields = []string{"type", "name"}
)

// choiceTool is an entry of tool_choice.tools.
type choiceTool struct{ Type, Name string }

// decodeToolChoice reads tool_choice (its text, "" absent) into d.Choice:
// "none", "auto", "required", {type:"function",name} or
// {type:"allowed_tools",mode,tools}; a built-in tool's choice needs a
// native Responses API.
func (d *Decoded) decodeToolChoice(raw string) *Error {
	tc := &d.Choice
	if raw == "" || raw == "null" {
		return nil
	}
	if raw[0] == '"' {
		tc.Mode = unquote(raw)
		switch tc.Mode {
		case "none", "auto", "required":
			return nil
		}
		return BadRequest("tool_choice", "tool_choice must be none, auto, required or an object, got %q", Cut(tc.Mode))
	}
	var obj struct {
		Type, Name, Namespace, Mode string
		Tools                       []choiceTool
	}
	e := object("tool_choice", raw, choiceFields, func(i int, v string) *Error {
		switch i {
		case 0:
			return str("tool_choice.type", v, &obj.Type)
		case 1:
			return str("tool_choice.name", v, &obj.Name)
		case 2:
			return str("tool_choice.namespace", v, &obj.Namespace)
		case 3:
			return str("tool_choice.mode", v, &obj.Mode)
		}
		switch k := kind(v); k {
		case "null":
			obj.Tools = nil
			return nil
		case "array":
		default:
			return typeError("tool_choice.tools", "an array", k)
		}
		// encoding/json reuses the elements: one is merged into, a null
		// one kept.
		ts := obj.Tools[:0]
		if ts == nil {
			ts = []choiceTool{}
		}
		var first *Error
		for w := jsonscan.Walk(v, 0); w.Next(); {
			if len(ts) < cap(ts) {
				ts = ts[:len(ts)+1]
			} else {
				ts = append(ts, choiceTool{})
			}
			if w.Val() == "null" {
				continue
			}
			t := &ts[len(ts)-1]
			e := object("tool_choice.tools", w.Val(), choiceToolFields, func(i int, v string) *Error {
				if i == 0 {
					return str("tool_choice.tools.type", v, &t.Type)
				}
				return str("tool_choice.tools.name", v, &t.Name)
			})
			if e != nil && first == nil {
				first = e
			}
		}
		obj.Tools = ts
		return first
	})
	if e != nil {
		return e
	}
	switch obj.Type {
	case "function", "custom":
		if obj.Name == "" {
			return BadRequest("tool_choice.name", "missing required parameter: 'tool_choice.name'")
		}
		tc.Name, tc.Namespace = obj.Name, obj.Namespace
		return nil
	case "allowed_tools":
		if obj.Mode != "auto" && obj.Mode != "required" {
			return BadRequest("tool_choice.mode", "tool_choice.mode must be auto or required, got %q", Cut(obj.Mode))
		}
		tc.Mode, tc.Allowed = obj.Mode, map[string]bool{}
		builtin := -1
		for i, t := range obj.Tools {
			if t.Type != "function" && t.Type != "custom" {
				builtin = i // left out on chat, as the tool is
				continue
			}
			tc.Allowed[t.Name] = true
		}
		if builtin >= 0 && obj.Mode == "required" && len(tc.Allowed) == 0 {
			// Only built-in tools, one of which must be called.
			d.needs(BadRequest(fmt.Sprintf("tool_choice.tools[%d].type", builtin), "only function and custom tools can be required on chat completions, got %q"+nativeOnly, Cut(obj.Tools[builtin].Type)))
		}
		return nil
	}
	d.needs(BadRequest("tool_choice.type", "tool_choice type %q is not supported (built-in tools are OpenAI's own)"+nativeOnly, Cut(obj.Type)))
	return nil
}
