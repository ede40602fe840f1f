package api

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// translation is a generateContent request translated onto chat
// completions (docs/ARCHITECTURE.md, "Gemini API"): the body to send, its
// model's place in it, and what the answer's translation back needs. It
// holds nothing of the client's body: the front door frees that as soon
// as the attempts are over.
type translation struct {
	body                 []byte
	modelStart, modelEnd int
	stream               bool
	model                string // the client's model name: the answer's modelVersion
}

// call is a function call of the conversation awaiting its response:
// the chat tool_call id a functionResponse of the same name (and id,
// when the client sent one) answers.
type call struct{ id, name, geminiID string }

// translate writes req as a chat completions request for model; stream
// asks for a stream with its usage. What chat completions cannot carry
// (safetySettings, thinkingConfig, cachedContent, topK, thought parts,
// built-in tools such as googleSearch and codeExecution) is dropped.
func translate(req request, model string, stream bool) *translation {
	doc := req.doc
	t := &translation{stream: stream, model: strings.Clone(model)}
	b := make([]byte, 0, len(doc.Raw)+256)
	b = append(b, `{"model":`...)
	t.modelStart = len(b)
	b = str(b, model)
	t.modelEnd = len(b)
	b = append(b, `,"messages":[`...)
	first := true
	sep := func(b []byte) []byte {
		if !first {
			b = append(b, ',')
		}
		first = false
		return b
	}
	if si := doc.Get("systemInstruction"); si.Exists() {
		if text := texts(si.Get("parts")); text != "" {
			b = sep(b)
			b = append(b, `{"role":"system","content":`...)
			b = str(b, text)
			b = append(b, '}')
		}
	}
	var pending []call
	ci := 0
	doc.Get("contents").ForEach(func(_, c gjson.Result) bool {
		if c.Get("role").Str == "model" {
			b, pending = assistant(b, c.Get("parts"), ci, sep)
		} else {
			b, pending = user(b, c.Get("parts"), pending, sep)
		}
		ci++
		return true
	})
	b = append(b, ']')
	b = tools(b, doc.Get("tools"), doc.Get("toolConfig.functionCallingConfig"))
	gc := doc.Get("generationConfig")
	b = number(b, "temperature", gc.Get("temperature"))
	b = number(b, "top_p", gc.Get("topP"))
	b = number(b, "presence_penalty", gc.Get("presencePenalty"))
	b = number(b, "frequency_penalty", gc.Get("frequencyPenalty"))
	b = number(b, "seed", gc.Get("seed"))
	if n := gc.Get("candidateCount"); n.Exists() && n.Int() > 1 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, n.Int(), 10)
	}
	if req.maxTokens > 0 {
		// max_tokens, as the Messages translation writes it: OpenAI-
		// compatible servers take it widely, and the adapters that
		// translate read both.
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, req.maxTokens, 10)
	}
	if stop := gc.Get("stopSequences"); stop.IsArray() && len(stop.Array()) > 0 {
		b = append(b, `,"stop":`...)
		b = append(b, stop.Raw...)
	}
	b = responseFormat(b, gc)
	if stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	t.body = append(b, '}')
	return t
}

// texts joins the text of parts that are not thoughts.
func texts(parts gjson.Result) string {
	var sb strings.Builder
	parts.ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("text"); t.Exists() && !p.Get("thought").Bool() {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(t.Str)
		}
		return true
	})
	return sb.String()
}

// assistant writes a model turn: its text, and its function calls as
// tool_calls, each remembered until a functionResponse answers it.
func assistant(b []byte, parts gjson.Result, ci int, sep func([]byte) []byte) ([]byte, []call) {
	var calls []call
	pi := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		if fc := p.Get("functionCall"); fc.Exists() {
			gid := fc.Get("id").Str
			id := gid
			if id == "" {
				id = "call_" + strconv.Itoa(ci) + "_" + strconv.Itoa(pi)
			}
			calls = append(calls, call{id: id, name: fc.Get("name").Str, geminiID: gid})
		}
		pi++
		return true
	})
	text := texts(parts)
	if text == "" && len(calls) == 0 {
		return b, nil
	}
	b = sep(b)
	b = append(b, `{"role":"assistant","content":`...)
	if text == "" {
		b = append(b, "null"...)
	} else {
		b = str(b, text)
	}
	if len(calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		i := 0
		parts.ForEach(func(_, p gjson.Result) bool {
			fc := p.Get("functionCall")
			if !fc.Exists() {
				return true
			}
			if i > 0 {
				b = append(b, ',')
			}
			c := calls[i]
			i++
			b = append(b, `{"id":`...)
			b = str(b, c.id)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = str(b, c.name)
			b = append(b, `,"arguments":`...)
			args := "{}"
			if a := fc.Get("args"); a.IsObject() {
				args = a.Raw
			}
			b = str(b, args)
			b = append(b, "}}"...)
			return true
		})
		b = append(b, ']')
	}
	return append(b, '}'), calls
}

// user writes a user turn: each functionResponse as the tool message
// answering its call (by id, else by name, the first unanswered), then
// the rest as one user message. A response that answers no call of the
// turn before is sent as text: chat completions refuses a tool message
// without its call.
func user(b []byte, parts gjson.Result, pending []call, sep func([]byte) []byte) ([]byte, []call) {
	var content []byte // the user message's parts, as a JSON array's elements
	nparts, onlyText := 0, true
	var text string
	add := func(part []byte) {
		if nparts > 0 {
			content = append(content, ',')
		}
		content = append(content, part...)
		nparts++
	}
	parts.ForEach(func(_, p gjson.Result) bool {
		switch {
		case p.Get("functionResponse").Exists():
			fr := p.Get("functionResponse")
			resp := "{}"
			if r := fr.Get("response"); r.IsObject() {
				resp = r.Raw
			}
			i := answered(pending, fr.Get("id").Str, fr.Get("name").Str)
			if i < 0 {
				text = "function " + fr.Get("name").Str + " returned " + resp
				add(textPart(text))
				return true
			}
			b = sep(b)
			b = append(b, `{"role":"tool","tool_call_id":`...)
			b = str(b, pending[i].id)
			b = append(b, `,"content":`...)
			b = str(b, resp)
			b = append(b, '}')
			pending = append(pending[:i], pending[i+1:]...)
		case p.Get("thought").Bool():
		case p.Get("text").Exists():
			text = p.Get("text").Str
			add(textPart(text))
		case p.Get("inlineData").Exists():
			onlyText = false
			add(media(p.Get("inlineData.mimeType").Str, "data:"+p.Get("inlineData.mimeType").Str+";base64,"+p.Get("inlineData.data").Str))
		case p.Get("fileData").Exists():
			onlyText = false
			add(media(p.Get("fileData.mimeType").Str, p.Get("fileData.fileUri").Str))
		}
		return true
	})
	if nparts == 0 {
		return b, pending
	}
	b = sep(b)
	b = append(b, `{"role":"user","content":`...)
	if onlyText && nparts == 1 {
		b = str(b, text)
	} else {
		b = append(b, '[')
		b = append(b, content...)
		b = append(b, ']')
	}
	return append(b, '}'), pending
}

// textPart is a chat text content part.
func textPart(t string) []byte {
	b := append(make([]byte, 0, len(t)+32), `{"type":"text","text":`...)
	return append(str(b, t), '}')
}

// answered is the index in pending of the call a functionResponse with
// id and name answers; -1 when none.
func answered(pending []call, id, name string) int {
	if id != "" {
		for i, c := range pending {
			if c.geminiID == id || c.id == id {
				return i
			}
		}
	}
	for i, c := range pending {
		if c.name == name {
			return i
		}
	}
	return -1
}

// media is a chat content part for an inline or referenced file: an
// image as image_url, a PDF as a file, anything else named in text
// (chat completions has no part for it).
func media(mime, url string) []byte {
	var b []byte
	switch {
	case strings.HasPrefix(mime, "image/") || mime == "":
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = str(b, url)
		return append(b, "}}"...)
	case mime == "application/pdf" && strings.HasPrefix(url, "data:"):
		b = append(b, `{"type":"file","file":{"filename":"document.pdf","file_data":`...)
		b = str(b, url)
		return append(b, "}}"...)
	}
	return textPart("[a file of type " + mime + " the model cannot read was left out]")
}

// tools writes the function declarations as chat tools, and the function
// calling config as tool_choice. Built-in tools (googleSearch,
// codeExecution, urlContext…) have no chat equivalent every target runs,
// and are dropped.
func tools(b []byte, ts, fcc gjson.Result) []byte {
	n := 0
	ts.ForEach(func(_, t gjson.Result) bool {
		t.Get("functionDeclarations").ForEach(func(_, fd gjson.Result) bool {
			if n == 0 {
				b = append(b, `,"tools":[`...)
			} else {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"function","function":{"name":`...)
			b = str(b, fd.Get("name").Str)
			if d := fd.Get("description"); d.Str != "" {
				b = append(b, `,"description":`...)
				b = str(b, d.Str)
			}
			b = append(b, `,"parameters":`...)
			switch p, js := fd.Get("parameters"), fd.Get("parametersJsonSchema"); {
			case js.IsObject():
				b = schema(b, js)
			case p.IsObject():
				b = schema(b, p)
			default:
				b = append(b, `{"type":"object","properties":{}}`...)
			}
			b = append(b, "}}"...)
			return true
		})
		return true
	})
	if n == 0 {
		return b
	}
	b = append(b, ']')
	switch fcc.Get("mode").Str {
	case "NONE":
		b = append(b, `,"tool_choice":"none"`...)
	case "ANY":
		if names := fcc.Get("allowedFunctionNames").Array(); len(names) == 1 {
			b = append(b, `,"tool_choice":{"type":"function","function":{"name":`...)
			b = str(b, names[0].Str)
			b = append(b, "}}"...)
		} else {
			b = append(b, `,"tool_choice":"required"`...)
		}
	}
	return b
}

// schema writes a Gemini Schema (OpenAPI's subset, its types upper case:
// "OBJECT") or a JSON Schema as JSON Schema: type names lower case,
// propertyOrdering dropped, nullable as a null type; the rest as written.
// Its depth is the body's, bounded by intake.Check.
func schema(b []byte, s gjson.Result) []byte {
	switch {
	case s.IsObject():
		b = append(b, '{')
		first := true
		nullable := s.Get("nullable").Bool()
		s.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "propertyOrdering", "nullable":
				return true
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = str(b, k.Str)
			b = append(b, ':')
			switch {
			case k.Str == "type" && v.Type == gjson.String:
				if nullable {
					b = append(b, '[')
					b = str(b, strings.ToLower(v.Str))
					b = append(b, `,"null"]`...)
				} else {
					b = str(b, strings.ToLower(v.Str))
				}
			case k.Str == "properties" || k.Str == "$defs" || k.Str == "definitions":
				// Property names are the client's: only their schemas
				// are read.
				if !v.IsObject() {
					b = append(b, v.Raw...)
					break
				}
				b = append(b, '{')
				i := 0
				v.ForEach(func(pk, pv gjson.Result) bool {
					if i > 0 {
						b = append(b, ',')
					}
					i++
					b = str(b, pk.Str)
					b = append(b, ':')
					b = schema(b, pv)
					return true
				})
				b = append(b, '}')
			default:
				b = schema(b, v)
			}
			return true
		})
		return append(b, '}')
	case s.IsArray():
		b = append(b, '[')
		i := 0
		s.ForEach(func(_, v gjson.Result) bool {
			if i > 0 {
				b = append(b, ',')
			}
			i++
			b = schema(b, v)
			return true
		})
		return append(b, ']')
	}
	return append(b, s.Raw...)
}

// responseFormat writes structured output: responseMimeType
// application/json with a schema (responseJsonSchema, else
// responseSchema) as a json_schema response_format, without one as
// json_object.
func responseFormat(b []byte, gc gjson.Result) []byte {
	if gc.Get("responseMimeType").Str != "application/json" {
		return b
	}
	for _, k := range [...]string{"responseJsonSchema", "_responseJsonSchema", "responseSchema"} {
		if s := gc.Get(k); s.IsObject() {
			b = append(b, `,"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":`...)
			b = schema(b, s)
			return append(b, "}}"...)
		}
	}
	return append(b, `,"response_format":{"type":"json_object"}`...)
}

// number writes "key":v when v is a number.
func number(b []byte, key string, v gjson.Result) []byte {
	if v.Type != gjson.Number {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return append(b, v.Raw...)
}

// str appends s as a JSON string.
func str(b []byte, s string) []byte {
	b, _ = openaiwire.Append(b, &s) // a string always encodes
	return b
}
