package api

import (
	"math"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/pricing"
)

// request is what the router reads of a generateContent body, checked as
// Google checks it before anything is sent: the fields it translates
// have the types Google's API gives them, so a translation never meets a
// shape it cannot write, and a native target never gets a body Google
// would refuse for its form.
type request struct {
	doc gjson.Result // the body, parsed (a copy of the client's bytes)
	// maxTokens is generationConfig.maxOutputTokens; 0 when not set.
	maxTokens int64
}

// maxContents bounds a request's contents, parts and declarations: far
// above any conversation, it keeps a hostile body's arrays from costing
// more than their bytes.
const maxItems = 100_000

// decode checks a generateContent body (valid JSON, an object: the front
// door's intake.Check passed). count says it is a countTokens body,
// whose contents may also come inside generateContentRequest, and may be
// empty.
func decode(body []byte, count bool) (request, *apierror.Error) {
	doc := gjson.ParseBytes(body)
	req := request{doc: doc}
	if count {
		if g := doc.Get("generateContentRequest"); g.Exists() {
			if !g.IsObject() {
				return req, bad("generateContentRequest must be an object")
			}
			doc = g
		}
	}
	f := topFields(doc)
	contents := f.contents
	switch {
	case !contents.Exists() && count:
	case !contents.IsArray():
		return req, bad("contents must be an array of Content objects")
	}
	n := 0
	var aerr *apierror.Error
	contents.ForEach(func(_, c gjson.Result) bool {
		aerr = checkContent(c, loc{content: n, part: -1})
		n++
		return aerr == nil && n <= maxItems
	})
	if aerr != nil {
		return req, aerr
	}
	if n > maxItems {
		return req, bad("contents holds more than " + strconv.Itoa(maxItems) + " entries")
	}
	if n == 0 && !count {
		return req, bad("contents must not be empty")
	}
	if si := f.systemInstruction; si.Exists() {
		if aerr := checkContent(si, loc{content: -1, part: -1}); aerr != nil {
			return req, aerr
		}
	}
	if aerr := checkTools(f.tools); aerr != nil {
		return req, aerr
	}
	if tc := f.toolConfig; tc.Exists() && !tc.IsObject() {
		return req, bad("toolConfig must be an object")
	}
	if tc := f.toolConfig.Get("functionCallingConfig"); tc.Exists() {
		if !tc.IsObject() {
			return req, bad("toolConfig.functionCallingConfig must be an object")
		}
		if m := tc.Get("mode"); m.Exists() && m.Type != gjson.String {
			return req, bad("toolConfig.functionCallingConfig.mode must be a string")
		}
		if aerr := stringArray("toolConfig.functionCallingConfig.allowedFunctionNames", tc.Get("allowedFunctionNames")); aerr != nil {
			return req, aerr
		}
	}
	gc := f.generationConfig
	if !gc.Exists() {
		return req, nil
	}
	if !gc.IsObject() {
		return req, bad("generationConfig must be an object")
	}
	var err *apierror.Error
	req.maxTokens, err = checkGeneration(gc)
	return req, err
}

// fields are the top-level values decode checks: each key's first
// value, as gjson's Get finds it, read in one walk of the object where a
// Get for each walked it again, stepping over the contents each time.
type fields struct{ contents, systemInstruction, tools, toolConfig, generationConfig gjson.Result }

func topFields(doc gjson.Result) fields {
	var f fields
	doc.ForEach(func(k, v gjson.Result) bool {
		var at *gjson.Result
		switch k.Str {
		case "contents":
			at = &f.contents
		case "systemInstruction":
			at = &f.systemInstruction
		case "tools":
			at = &f.tools
		case "toolConfig":
			at = &f.toolConfig
		case "generationConfig":
			at = &f.generationConfig
		default:
			return true
		}
		if !at.Exists() {
			*at = v
		}
		return true
	})
	return f
}

// loc is where a Content or a Part stands (in contents, or content -1:
// systemInstruction), written out only for an error: a request's every
// part costs no string.
type loc struct{ content, part int }

func (l loc) String() string {
	s := "systemInstruction"
	if l.content >= 0 {
		s = "contents[" + strconv.Itoa(l.content) + "]"
	}
	if l.part >= 0 {
		s += ".parts[" + strconv.Itoa(l.part) + "]"
	}
	return s
}

// checkContent checks one Content: an object with an optional string
// role and an array of Part objects.
func checkContent(c gjson.Result, at loc) *apierror.Error {
	if !c.IsObject() {
		return bad(at.String() + " must be a Content object")
	}
	if r := c.Get("role"); r.Exists() && r.Type != gjson.String {
		return bad(at.String() + ".role must be a string")
	}
	parts := c.Get("parts")
	if !parts.Exists() {
		return nil
	}
	if !parts.IsArray() {
		return bad(at.String() + ".parts must be an array of Part objects")
	}
	i := 0
	var aerr *apierror.Error
	parts.ForEach(func(_, p gjson.Result) bool {
		aerr = checkPart(p, loc{content: at.content, part: i})
		i++
		return aerr == nil && i <= maxItems
	})
	if aerr == nil && i > maxItems {
		aerr = bad(at.String() + ".parts holds more than " + strconv.Itoa(maxItems) + " entries")
	}
	return aerr
}

// checkPart checks the fields of a Part the translation reads.
func checkPart(p gjson.Result, at loc) *apierror.Error {
	if !p.IsObject() {
		return bad(at.String() + " must be a Part object")
	}
	var aerr *apierror.Error
	p.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "text", "thoughtSignature":
			if v.Type != gjson.String {
				aerr = bad(at.String() + "." + k.Str + " must be a string")
			}
		case "thought":
			if v.Type != gjson.True && v.Type != gjson.False {
				aerr = bad(at.String() + ".thought must be a boolean")
			}
		case "inlineData", "fileData":
			if !v.IsObject() {
				aerr = bad(at.String() + "." + k.Str + " must be an object")
				break
			}
			for _, f := range [...]string{"mimeType", "data", "fileUri"} {
				if x := v.Get(f); x.Exists() && x.Type != gjson.String {
					aerr = bad(at.String() + "." + k.Str + "." + f + " must be a string")
				}
			}
		case "functionCall", "functionResponse":
			if !v.IsObject() {
				aerr = bad(at.String() + "." + k.Str + " must be an object")
				break
			}
			if n := v.Get("name"); n.Type != gjson.String || n.Str == "" {
				aerr = bad(at.String() + "." + k.Str + ".name must be a non-empty string")
				break
			}
			if id := v.Get("id"); id.Exists() && id.Type != gjson.String {
				aerr = bad(at.String() + "." + k.Str + ".id must be a string")
				break
			}
			field := "args"
			if k.Str == "functionResponse" {
				field = "response"
			}
			if x := v.Get(field); x.Exists() && !x.IsObject() {
				aerr = bad(at.String() + "." + k.Str + "." + field + " must be an object")
			}
		}
		return aerr == nil
	})
	return aerr
}

// checkTools checks tools: an array of Tool objects whose
// functionDeclarations are objects with a name.
func checkTools(tools gjson.Result) *apierror.Error {
	if !tools.Exists() {
		return nil
	}
	if !tools.IsArray() {
		return bad("tools must be an array of Tool objects")
	}
	var aerr *apierror.Error
	n := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		at := "tools[" + strconv.Itoa(n) + "]"
		n++
		if !t.IsObject() {
			aerr = bad(at + " must be a Tool object")
			return false
		}
		fds := t.Get("functionDeclarations")
		if !fds.Exists() {
			return true
		}
		if !fds.IsArray() {
			aerr = bad(at + ".functionDeclarations must be an array")
			return false
		}
		i := 0
		fds.ForEach(func(_, fd gjson.Result) bool {
			if msg := checkDeclaration(fd); msg != "" {
				aerr = bad(at + ".functionDeclarations[" + strconv.Itoa(i) + "]" + msg)
			}
			i++
			return aerr == nil && i <= maxItems
		})
		return aerr == nil && n <= maxItems
	})
	return aerr
}

// checkDeclaration checks one function declaration: "" when it is
// well formed, else what is wrong, after its place. Its fields are read in
// one walk (the first of each key, as gjson's Get finds it), where a Get
// for each walked it again, twice for those present.
func checkDeclaration(fd gjson.Result) string {
	if !fd.IsObject() {
		return " must be an object"
	}
	var name, desc, params, schema gjson.Result
	fd.ForEach(func(k, v gjson.Result) bool {
		var at *gjson.Result
		switch k.Str {
		case "name":
			at = &name
		case "description":
			at = &desc
		case "parameters":
			at = &params
		case "parametersJsonSchema":
			at = &schema
		default:
			return true
		}
		if !at.Exists() {
			*at = v
		}
		return true
	})
	switch {
	case name.Type != gjson.String || name.Str == "":
		return ".name must be a non-empty string"
	case desc.Exists() && desc.Type != gjson.String:
		return ".description must be a string"
	case params.Exists() && !params.IsObject():
		return ".parameters must be a Schema object"
	case schema.Exists() && !schema.IsObject():
		return ".parametersJsonSchema must be an object"
	}
	return ""
}

// checkGeneration checks generationConfig's fields the translation reads
// and returns maxOutputTokens (0 when not set): an integer from 1 to
// pricing.MaxTokens, as max_tokens is at every front door.
func checkGeneration(gc gjson.Result) (int64, *apierror.Error) {
	var max int64
	var aerr *apierror.Error
	gc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "maxOutputTokens":
			switch {
			case v.Type != gjson.Number || v.Num != math.Trunc(v.Num):
				aerr = bad("generationConfig.maxOutputTokens must be an integer")
			case !(v.Num <= pricing.MaxTokens): // 1e999 reads as +Inf
				aerr = bad("generationConfig.maxOutputTokens must be at most " + strconv.Itoa(pricing.MaxTokens))
			case v.Num < 1:
				aerr = bad("generationConfig.maxOutputTokens must be at least 1")
			default:
				max = int64(v.Num)
			}
		case "candidateCount":
			if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) || v.Num < 1 || v.Num > 8 {
				aerr = bad("generationConfig.candidateCount must be an integer from 1 to 8")
			}
		case "temperature", "topP", "topK", "presencePenalty", "frequencyPenalty", "seed":
			if v.Type != gjson.Number || math.IsInf(v.Num, 0) {
				aerr = bad("generationConfig." + k.Str + " must be a number")
			}
		case "stopSequences":
			aerr = stringArray("generationConfig.stopSequences", v)
		case "responseMimeType":
			if v.Type != gjson.String {
				aerr = bad("generationConfig.responseMimeType must be a string")
			}
		case "responseSchema", "responseJsonSchema", "_responseJsonSchema":
			if !v.IsObject() {
				aerr = bad("generationConfig." + k.Str + " must be an object")
			}
		}
		return aerr == nil
	})
	return max, aerr
}

// stringArray checks that v, when present, is an array of strings.
func stringArray(at string, v gjson.Result) *apierror.Error {
	if !v.Exists() {
		return nil
	}
	if !v.IsArray() {
		return bad(at + " must be an array of strings")
	}
	var aerr *apierror.Error
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			aerr = bad(at + " must be an array of strings")
		}
		return aerr == nil
	})
	return aerr
}
