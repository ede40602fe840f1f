package messages

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/goldentest"
)

// decodeInputs are decode.golden's bodies: FuzzDecode's seeds, the
// bodies TestDecodeRefusals, TestDecodeAccepts and TestDecodeCount read,
// and shapes a walk may read otherwise than a decoder (keys escaped and
// repeated, whitespace, nesting, numbers at their limits).
func decodeInputs() []string {
	in := append([]string{}, decodeSeeds...)
	in = append(in, refusalBodies()...)
	in = append(in, acceptBodies()...)
	in = append(in,
		`{"m\u006fdel":"m","max_t\u006fkens":5,"m\u0065ssages":[{"r\u006fle":"user","c\u006fntent":[{"typ\u0065":"text","t\u0065xt":"escaped keys"}]}],"st\u0072eam":true,"metadata":{"user_\u0069d":"\u0075"}}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","role":"assistant","content":"a","content":[{"type":"text","text":"b"}]}],"system":"x"}`,
		` { "model" : "m" , "max_tokens" : 5 , "system" : [ { "type" : "text" , "text" : "s" } ] , "messages" : [ { "role" : "user" , "content" : [ { "type" : "text" , "text" : "spaced" } ] } ] } `,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{"a":[[[[{"b":[[[[null]]]]}]]]]}}]}]}`,
		`{"model":"m","max_tokens":2147483648,"top_k":9007199254740993,"temperature":-0,"top_p":1E+2,"messages":[{"role":"user","content":"a"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0"}},{"type":"document","source":{"type":"text","data":"d"}},{"type":"tool_use","id":"i","name":"n","input":{"k":1}},{"type":"newer","text":"t"}]}]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"a-b_c","input_schema":{},"description":null},{"type":"custom","name":"x","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"\u00e9\ud83d\ude00"}]}`,
	)
	return in
}

// TestDecodeGolden: what Decode and DecodeCount read from each body of
// decode.golden (the request, the texts the translation reads, the
// estimate), or the refusal, is the file's.
func TestDecodeGolden(t *testing.T) {
	var b strings.Builder
	for i, body := range decodeInputs() {
		fmt.Fprintf(&b, "# %d\nbody: %s\n", i, literal(body))
		for _, count := range []bool{false, true} {
			f, e := decode([]byte(body), count, true)
			name := "decode"
			if count {
				name = "count"
			}
			fmt.Fprintf(&b, "%s: %s\n", name, renderForm([]byte(body), f, e))
		}
	}
	goldentest.Check(t, "decode.golden", b.String())
}

// renderForm writes a form on one line: a text aliasing the body as its
// offsets in it, "-" when nil.
func renderForm(body []byte, f Form, e *Error) string {
	if e != nil {
		return fmt.Sprintf("refused %d %s %q", e.Status, e.Type, e.Message)
	}
	at := func(p []byte) string {
		if p == nil {
			return "-"
		}
		start := cap(body) - cap(p)
		return strconv.Itoa(start) + ":" + strconv.Itoa(start+len(p))
	}
	return fmt.Sprintf("model=%q %d:%d stream=%v max_tokens=%d user_id=%q system=%s messages=%s tools=%s tool_choice=%s temperature=%s top_p=%s stop_sequences=%s input_tokens=%d",
		f.Model, f.ModelStart, f.ModelEnd, f.Stream, f.MaxTokens, f.UserID, at(f.System), at(f.Messages), at(f.Tools), at(f.ToolChoice),
		at(f.Temperature), at(f.TopP), at(f.StopSequences), f.InputTokens)
}

// literal is s as a Go string literal, raw where it can be (a body reads
// as it was sent).
func literal(s string) string {
	if strconv.CanBackquote(s) && !strings.Contains(s, "\n") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}
