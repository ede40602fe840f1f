package nodesdk

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"
)

// fakeGemini is the Gemini API: POST /v1beta/models/{m}:generateContent,
// :streamGenerateContent (alt=sse), :countTokens. Like the real one it
// wants its key in x-goog-api-key and, with signatures set, refuses as
// Gemini 3 does (400 INVALID_ARGUMENT) a request whose current turn has a
// model functionCall without a thoughtSignature on its step's first call.
// Its model behaviour is the other fakes': a tool call when tools are
// offered and the last user turn carries no functionResponse, else text
// quoting the response; a request for JSON (responseMimeType
// application/json, Gemini CLI's model router) gets a JSON value of its
// schema.
type fakeGemini struct {
	recorder
	srv        *httptest.Server
	name, key  string
	prefer     []toolCall
	signatures bool
	ids        atomic.Int64
}

func newFakeGemini(t testing.TB, name, key string, signatures bool, prefer ...toolCall) *fakeGemini {
	f := &fakeGemini{name: name, key: key, prefer: prefer, signatures: signatures}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func gemError(w http.ResponseWriter, status int, word, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": word}})
}

var gemPath = regexp.MustCompile(`^/v1beta/models/([^:/]+):(generateContent|streamGenerateContent|countTokens)$`)

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.record(r, body)
	if r.Header.Get("X-Goog-Api-Key") != f.key {
		gemError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
		return
	}
	m := gemPath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || m == nil {
		gemError(w, http.StatusNotFound, "NOT_FOUND", "unknown path "+r.URL.Path)
		return
	}
	if !gjson.ValidBytes(body) {
		gemError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	req := gjson.ParseBytes(body)
	if m[2] == "countTokens" {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": tokens(body)})
		return
	}
	if f.signatures {
		if at := missingSignature(req.Get("contents").Array()); at != "" {
			gemError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Function call is missing a thought_signature in functionCall parts. "+at)
			return
		}
	}
	var offered []offeredTool
	for _, t := range req.Get("tools").Array() {
		for _, fd := range t.Get("functionDeclarations").Array() {
			s := fd.Get("parametersJsonSchema")
			if !s.Exists() {
				s = fd.Get("parameters")
			}
			offered = append(offered, offeredTool{name: fd.Get("name").Str, schema: gjson.Parse(lowerTypes(s.Raw))})
		}
	}
	contents := req.Get("contents").Array()
	var result string
	sawResult := false
	if n := len(contents); n > 0 {
		for _, p := range contents[n-1].Get("parts").Array() {
			if fr := p.Get("functionResponse"); fr.Exists() {
				sawResult = true
				result += fr.Get("response").Raw
			}
		}
	}
	gc := req.Get("generationConfig")
	id := f.ids.Add(1)
	var part map[string]any
	switch {
	case gc.Get("responseMimeType").Str == "application/json":
		s := gc.Get("responseJsonSchema")
		if !s.Exists() {
			s = gc.Get("responseSchema")
		}
		v, _ := json.Marshal(sample(gjson.Parse(lowerTypes(s.Raw))))
		part = map[string]any{"text": string(v)}
	case len(offered) > 0 && !sawResult && req.Get("toolConfig.functionCallingConfig.mode").Str != "NONE":
		name, input := pickTool(f.prefer, offered)
		part = map[string]any{"functionCall": map[string]any{"name": name, "args": json.RawMessage(input)},
			"thoughtSignature": fmt.Sprintf("c2lnLSVk%s%d", f.name, id)}
	default:
		part = map[string]any{"text": reply(f.name, result, sawResult)}
	}
	usage := map[string]any{"promptTokenCount": tokens(body), "candidatesTokenCount": 8, "totalTokenCount": tokens(body) + 8}
	resp := map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
		"finishReason": "STOP", "index": 0}}, "usageMetadata": usage, "modelVersion": m[1], "responseId": fmt.Sprintf("%s-%d", f.name, id)}
	if m[2] == "generateContent" {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	if r.URL.Query().Get("alt") != "sse" {
		writeJSON(w, http.StatusOK, []any{resp})
		return
	}
	s := newSSE(w)
	if text, ok := part["text"].(string); ok && len(text) > 1 {
		// Text in two events, the finish and usage on the last.
		h := halves(text)
		s.event("", map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"text": h[0]}}}, "index": 0}}, "modelVersion": m[1]})
		part = map[string]any{"text": h[1]}
		resp["candidates"] = []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}}
	}
	s.event("", resp)
}

// missingSignature says where the current turn (the contents after the
// last user turn with text) has a model step whose first functionCall
// part has no thoughtSignature; "" when none.
func missingSignature(contents []gjson.Result) string {
	start := 0
	for i, c := range contents {
		if c.Get("role").Str == "model" {
			continue
		}
		for _, p := range c.Get("parts").Array() {
			if p.Get("text").Exists() {
				start = i
			}
		}
	}
	for i := start; i < len(contents); i++ {
		c := contents[i]
		if c.Get("role").Str != "model" {
			continue
		}
		for j, p := range c.Get("parts").Array() {
			if p.Get("functionCall").Exists() {
				if !p.Get("thoughtSignature").Exists() {
					return fmt.Sprintf("contents[%d].parts[%d]", i, j)
				}
				break
			}
		}
	}
	return ""
}

// lowerTypes writes a Gemini Schema's upper-case type names ("OBJECT")
// as JSON Schema's, for sample.
func lowerTypes(raw string) string {
	for _, t := range []string{"OBJECT", "STRING", "INTEGER", "NUMBER", "BOOLEAN", "ARRAY", "NULL"} {
		raw = strings.ReplaceAll(raw, `"`+t+`"`, `"`+strings.ToLower(t)+`"`)
	}
	return raw
}
