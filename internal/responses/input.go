package responses

import (
	"encoding/json"
	"fmt"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// inputItem is an input item as sent; which fields apply depends on Type.
// content and output are read where they stand (content).
type inputItem struct {
	Type, ID, Role, CallID, Name, Namespace string
	Arguments, Input                        *string
	Content, Output                         content
}

// content is a message's content or a function's output as sent: its
// text, and its parts when an array (the first part's value of the wrong
// type in err).
type content struct {
	raw   string
	parts []inputPart
	err   *Error
}

var itemFields = []string{"type", "id", "role", "content", "call_id", "name", "arguments", "input", "namespace", "output"}

// inputPart is a content part as sent.
type inputPart struct {
	Type, Text, Refusal, Detail, FileData, Filename string
	ImageURL, FileID, FileURL                       *string
}

var partFields = []string{"type", "text", "refusal", "image_url", "file_id", "detail", "file_data", "file_url", "filename"}

// readInput reads input where w is into Request.Input, d.Items and
// d.Sent, and dc.input: a string (one user message) or an array of
// items, each read where it stands. An item chat completions cannot take
// is kept as sent (Item.Raw): a reasoning item (left out of a translated
// conversation, sent back as is to a native Responses API), and an item
// or a content part only a native Responses API reads (a built-in tool's
// call or output, an OpenAI file id), which the request then needs.
func (dc *decoder) readInput(w *jsonscan.Walker) {
	d := dc.d
	d.Items, d.Sent, dc.input.err, dc.input.native = nil, nil, nil, nil
	if w.First() != '[' {
		w.Skip()
		v := w.Val()
		d.Input = dc.raw(v)
		switch {
		case v == "", v == "null":
		case v[0] == '"':
			d.Items = []wire.Item{{Type: wire.TypeMessage, Role: "user", Text: unquote(v)}}
		default:
			dc.input.err = BadRequest("input", "input must be a string or an array of items")
		}
		return
	}
	start := w.At()
	d.Items, d.Sent = make([]wire.Item, 0, 8), make([]json.RawMessage, 0, 8)
	iw := w.Walk()
	for i := 0; iw.Member(); i++ {
		at := iw.At()
		var in inputItem
		var e *Error
		if iw.First() == '{' {
			e = dc.item(&iw, i, &in)
		} else {
			iw.Skip()
		}
		end := iw.At()
		if end < 0 {
			break
		}
		r := dc.raw(dc.s[at:end])
		d.Sent = append(d.Sent, r)
		if dc.input.err != nil {
			continue
		}
		if r[0] != '{' {
			dc.input.err = BadRequest(fmt.Sprintf("input[%d]", i), "input[%d] must be an object", i)
			continue
		}
		if e == nil {
			e = dc.inputItem(func() string { return fmt.Sprintf("input[%d]", i) }, &in, r)
		}
		dc.input.err = e
	}
	w.Resume(iw.At())
	if end := w.At(); end >= 0 {
		d.Input = dc.raw(dc.s[start:end])
	}
}

// item reads the item object where w is into in, returning the first
// value of the wrong type for inputItem's fields.
func (dc *decoder) item(w *jsonscan.Walker, i int, in *inputItem) *Error {
	param := func() string { return fmt.Sprintf("input[%d]", i) }
	var first *Error
	iw := w.Walk()
	for iw.Member() {
		f := field(iw.Key(), itemFields)
		if f == 3 || f == 9 { // content, output
			c, name, k := &in.Content, "content", 0
			if f == 9 {
				c, name, k = &in.Output, "output", 1
			}
			dc.content(&iw, c, &dc.scratch[k], func() string { return param() + "." + name })
			continue
		}
		iw.Skip()
		v := iw.Val()
		if v == "" || f < 0 {
			continue
		}
		var e *Error
		switch f {
		case 0:
			e = str("", v, &in.Type)
		case 1:
			e = str("", v, &in.ID)
		case 2:
			e = str("", v, &in.Role)
		case 4:
			e = str("", v, &in.CallID)
		case 5:
			e = str("", v, &in.Name)
		case 6:
			e = strPtr("", v, &in.Arguments)
		case 7:
			e = strPtr("", v, &in.Input)
		case 8:
			e = str("", v, &in.Namespace)
		}
		if e != nil && first == nil {
			first = typeError(param()+"."+itemFields[f], "a string", kind(v))
		}
	}
	w.Resume(iw.At())
	return first
}

// content reads a content or an output where w is into c: its text, and
// its parts when an array (in scratch, reused between items).
func (dc *decoder) content(w *jsonscan.Walker, c *content, scratch *[]inputPart, param func() string) {
	c.parts, c.err = nil, nil
	if w.First() != '[' {
		w.Skip()
		c.raw = w.Val()
		return
	}
	start := w.At()
	ps := (*scratch)[:0]
	pw := w.Walk()
	for pw.Member() {
		ps = append(ps, inputPart{})
		p := &ps[len(ps)-1]
		if pw.First() != '{' {
			pw.Skip()
			if v := pw.Val(); v != "" && v != "null" && c.err == nil {
				c.err = typeError(param(), "an object", kind(v))
			}
			continue
		}
		fw := pw.Walk()
		for fw.Next() {
			f := field(fw.Key(), partFields)
			if f < 0 {
				continue
			}
			v := fw.Val()
			var e *Error
			switch f {
			case 0:
				e = str("", v, &p.Type)
			case 1:
				e = str("", v, &p.Text)
			case 2:
				e = str("", v, &p.Refusal)
			case 3:
				e = strPtr("", v, &p.ImageURL)
			case 4:
				e = strPtr("", v, &p.FileID)
			case 5:
				e = str("", v, &p.Detail)
			case 6:
				e = str("", v, &p.FileData)
			case 7:
				e = strPtr("", v, &p.FileURL)
			case 8:
				e = str("", v, &p.Filename)
			}
			if e != nil && c.err == nil {
				c.err = typeError(param()+"."+partFields[f], "a string", kind(v))
			}
		}
		pw.Resume(fw.At())
	}
	w.Resume(pw.At())
	if end := w.At(); end >= 0 {
		c.raw = dc.s[start:end]
	}
	*scratch, c.parts = ps, ps
}

// inputItem reads the item in (as sent: r) into d.Items.
func (dc *decoder) inputItem(param func() string, in *inputItem, r json.RawMessage) *Error {
	d := dc.d
	if in.Type == "" {
		switch {
		case in.Role != "":
			in.Type = wire.TypeMessage // an "easy" message: type is optional
		case in.ID != "" && isNull(in.Content.raw):
			in.Type = wire.TypeItemReference
		default:
			return BadRequest(param()+".type", "missing required parameter: '%s.type'", param())
		}
	}
	it := wire.Item{Type: in.Type, ID: in.ID}
	native := false
	var e *Error
	switch in.Type {
	case wire.TypeMessage:
		native, e = dc.message(param, in, &it)
	case wire.TypeFunctionCall:
		switch {
		case in.CallID == "":
			return BadRequest(param()+".call_id", "missing required parameter: '%s.call_id'", param())
		case in.Name == "":
			return BadRequest(param()+".name", "missing required parameter: '%s.name'", param())
		case in.Arguments == nil:
			return BadRequest(param()+".arguments", "missing required parameter: '%s.arguments'", param())
		}
		it.CallID, it.Name, it.Arguments, it.Namespace = in.CallID, in.Name, *in.Arguments, in.Namespace
	case wire.TypeCustomToolCall:
		switch {
		case in.CallID == "":
			return BadRequest(param()+".call_id", "missing required parameter: '%s.call_id'", param())
		case in.Name == "":
			return BadRequest(param()+".name", "missing required parameter: '%s.name'", param())
		case in.Input == nil:
			return BadRequest(param()+".input", "missing required parameter: '%s.input'", param())
		}
		it.CallID, it.Name, it.Arguments = in.CallID, in.Name, *in.Input
	case wire.TypeFunctionCallOutput, wire.TypeCustomToolCallOutput:
		if in.CallID == "" {
			return BadRequest(param()+".call_id", "missing required parameter: '%s.call_id'", param())
		}
		it.CallID = in.CallID
		native, e = dc.parts(func() string { return param() + ".output" }, &in.Output, "tool", &it)
	case wire.TypeItemReference:
		if in.ID == "" {
			return BadRequest(param()+".id", "missing required parameter: '%s.id'", param())
		}
	case wire.TypeReasoning:
		it.Raw = r
	default:
		dc.needs(BadRequest(param()+".type", "the input item type %q is not supported (chat completions take messages, "+
			"function calls and function call outputs only)"+nativeOnly, Cut(in.Type)))
		native = true
	}
	if e != nil {
		return e
	}
	if native {
		it.Raw = r
	}
	d.Items = append(d.Items, it)
	return nil
}

// needs records the first reason the input needs a native Responses API.
func (dc *decoder) needs(e *Error) {
	if dc.input.native == nil {
		dc.input.native = e
	}
}

// message reads a message item's role and content into it; native says
// a part of it only a native Responses API reads.
func (dc *decoder) message(param func() string, in *inputItem, it *wire.Item) (native bool, e *Error) {
	switch in.Role {
	case "user", "assistant", "system", "developer":
	case "":
		return false, BadRequest(param()+".role", "missing required parameter: '%s.role'", param())
	default:
		return false, BadRequest(param()+".role", "%s.role must be user, assistant, system or developer, got %q", param(), Cut(in.Role))
	}
	it.Role = in.Role
	if isNull(in.Content.raw) {
		return false, BadRequest(param()+".content", "missing required parameter: '%s.content'", param())
	}
	return dc.parts(func() string { return param() + ".content" }, &in.Content, in.Role, it)
}

// parts reads a message's content or a function output (role "tool"):
// a string, or an array of parts. Images and files are for user messages
// and function outputs; refusals and output text for assistant messages.
// A part only a native Responses API reads (an OpenAI file id, a file
// URL) is left out of it.Parts, and native says so.
func (dc *decoder) parts(param func() string, c *content, role string, it *wire.Item) (native bool, e *Error) {
	if isNull(c.raw) {
		return false, BadRequest(param(), "missing required parameter: '%s'", param())
	}
	switch c.raw[0] {
	case '"':
		it.Text = unquote(c.raw)
		return false, nil
	case '[':
	default:
		return false, BadRequest(param(), "%s must be a string or an array of content parts", param())
	}
	if c.err != nil {
		return false, c.err
	}
	it.Parts = make([]wire.Part, 0, len(c.parts))
	media := role == "user" || role == "tool"
	nativePart := func(field, what string) {
		dc.needs(BadRequest(field, "%s", what+nativeOnly))
		native = true
	}
	for j, p := range c.parts {
		pp := func() string { return fmt.Sprintf("%s[%d]", param(), j) }
		switch {
		case p.Type == wire.PartInputText || p.Type == wire.PartOutputText:
			it.Parts = append(it.Parts, wire.Part{Type: p.Type, Text: p.Text})
		case p.Type == wire.PartRefusal && role == "assistant":
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartRefusal, Text: p.Refusal})
		case p.Type == wire.PartInputImage && media:
			if p.FileID != nil && *p.FileID != "" {
				nativePart(pp()+".file_id", "OpenAI file ids are not supported (send image_url, an https or data: URL)")
				continue
			}
			if p.ImageURL == nil || *p.ImageURL == "" {
				return false, BadRequest(pp()+".image_url", "missing required parameter: '%s.image_url'", pp())
			}
			detail := p.Detail
			if detail == "" {
				detail = "auto" // required by the spec, often left out
			}
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartInputImage, ImageURL: *p.ImageURL, Detail: detail})
		case p.Type == wire.PartInputFile && media:
			switch {
			case p.FileID != nil && *p.FileID != "":
				nativePart(pp()+".file_id", "OpenAI file ids are not supported (send file_data, a base64 data: URL)")
				continue
			case p.FileURL != nil && *p.FileURL != "":
				nativePart(pp()+".file_url", "file URLs are not supported (send file_data, a base64 data: URL)")
				continue
			case p.FileData == "":
				return false, BadRequest(pp()+".file_data", "missing required parameter: '%s.file_data'", pp())
			}
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartInputFile, FileData: p.FileData, Filename: p.Filename})
		default:
			where := "a " + role + " message"
			if role == "tool" {
				where = "a function call output"
			}
			return false, BadRequest(pp()+".type", "the content part type %q is not supported in %s", Cut(p.Type), where)
		}
	}
	return native, nil
}
