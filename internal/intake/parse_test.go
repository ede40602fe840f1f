package intake

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/goldentest"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// parseInputs are parse.golden's bodies: the shapes each of Parse's
// branches reads, refusals of the check and of the fields in either
// order, and shapes a walk may read otherwise than a decoder (keys
// escaped, whitespace, repeated keys inside a message).
var parseInputs = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."}],"temperature":0.3,"max_tokens":64}`,
	`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"what is in this image?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"tool_choice":"auto"}`,
	` { "messages" : [ { "role" : "user" , "content" : "x" } ] , "model" : "m" } `,
	"\t{\n\"model\" :\r\"m\"\n,\"messages\":[ ]}\n",
	`{"model":"\u006d","messages":[{"role":"user","content":"escaped model"}]}`,
	`{"m\u006fdel":"m","m\u0065ssages":[{"r\u006fle":"user","content":"escaped keys"}],"str\u0065am":false,"pr\u006fmpt":"p","inp\u0075t":"i"}`,
	`{"model":"a\"b\\c\u00e9\ud83d\ude00","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"a","model":"m","messages":[{"role":"user","content":"duplicate key"}]}`,
	`{"model":"m","m\u006fdel":"n","messages":[{"role":"user","content":"escaped duplicate"}]}`,
	`{"model":"m","messages":[{"role":7,"role":"user","content":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","role":7,"content":"x"}]}`,
	`{"model":"nope","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"","messages":[{"role":"user","content":"x"}]}`,
	`{"model":null,"messages":[{"role":"user","content":"x"}]}`,
	`{"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m"}`,
	`{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stream":null,"stream_options":null,"max_tokens":null,"prompt_cache_key":null,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stream_options":{"include_usage":1},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stream_options":{"include_usage":null,"include_usage":true},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stream_options":{"other":1},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stream_options":[],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stream_options":"x","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":1e400,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":-1,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":-0,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":2.0E1,"max_completion_tokens":7,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":"5","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":true,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_completion_tokens":[1],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":99999999999,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":1000000,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","prompt_cache_key":"conv-1","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","prompt_cache_key":7,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","messages":[{"content":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"},"y"]}`,
	`{"model":"m","messages":[[]]}`,
	`{"model":"m","messages":{"role":"user"}}`,
	`{"model":"m","messages":"hi"}`,
	`{"model":"m","messages":null}`,
	`{"model":7,"messages":[]}`,
	`{"model":7,"messages":[],"x":}`,
	`{"model":"m","messages":[{"content":"x"}],"model":"n"}`,
	`{"model":"m","messages":[{"content":"x"}]} x`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],}`,
	`{"model":"m","messages":[{"role":"user","content":"x"},]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}]`,
	`{"model":"m","messages":[{"role":"user","content":"\xff"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"deep":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
	`{"model":"m","messages":[{"role":"user","content":` + strings.Repeat("[", 254) + strings.Repeat("]", 254) + `}]}`,
	`{"model":`,
	`[1,2]`,
	`[]`,
	`"m"`,
	`7`,
	`null`,
	``,
	`   `,
	`{}`,
	`{"model":"m","prompt":"Say this is a test","max_tokens":7}`,
	`{"model":"m","prompt":["a","b"],"stream":true}`,
	`{"model":"m","prompt":7}`,
	`{"model":"m","prompt":null}`,
	`{"model":"m","input":"The food was delicious"}`,
	`{"model":"m","input":["a","b"],"encoding_format":"float"}`,
	`{"model":"m","input":[],"stream":true}`,
	`{"model":"m","input":[ ],"stream":false}`,
	`{"model":"m","input":[[1,2]],"stream":true}`,
	`{"model":"m","input":{"a":1}}`,
}

// TestParseGolden: what Parse reads from each of parseInputs for each
// operation, or its refusal, as testdata/parse.golden has it.
func TestParseGolden(t *testing.T) {
	var b strings.Builder
	for _, op := range []provider.Op{provider.OpChat, provider.OpCompletions, provider.OpEmbeddings} {
		for _, in := range parseInputs {
			f, aerr := Parse(op, []byte(in))
			fmt.Fprintf(&b, "%s %q\n", op, in)
			if aerr != nil {
				fmt.Fprintf(&b, "  refused %d %s %s param=%q %q\n", aerr.Status, aerr.Type, aerr.Code, aerr.Param, aerr.Message)
				continue
			}
			fmt.Fprintf(&b, "  model=%q [%d,%d) stream=%v include_usage=%v max_tokens=%d messages=%q prompt_cache_key=%q\n",
				f.Model, f.ModelStart, f.ModelEnd, f.Stream, f.IncludeUsage, f.MaxTokens, f.Messages, f.PromptCacheKey)
		}
	}
	goldentest.Check(t, "parse.golden", b.String())
}

// TestParseTurnsOpening: the opening hashed from the turns Parse's walk
// hands over is the one affinity.Opening reads from the messages again,
// for every chat body of parse.golden Parse accepts and openings of
// every shape; the walk stops handing turns once the opening is
// complete.
func TestParseTurnsOpening(t *testing.T) {
	bodies := append([]string{
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":[{"type":"text","text":"d"}]},{"role":"user","content":"u"},{"role":"assistant","content":"a"},{"role":"user","content":"v"}]}`,
		`{"model":"m","messages":[{"content":"c","role":"user","content":"later","role":"x"}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":null},{"role":"user"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"only"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"1"},{"role":"system","content":"2"},{"role":"system","content":"3"},{"role":"user","content":"4"},{"role":"assistant","content":"5"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"1"},{"role":"system","content":"2"},{"role":"system","content":"3"},{"role":"system","content":"4"},{"role":"user","content":"5"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"1"},{"role":"system","content":"2"},{"role":"system","content":"3"},{"role":"system","content":"4"},{"role":"user","content":"5"},{"role":"user","content":"6"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}},{"text":"t"}]},{"role":"user","content":"next"}]}`,
	}, parseInputs...)
	for _, body := range bodies {
		var o affinity.Turns
		turns := 0
		f, aerr := ParseTurns(provider.OpChat, []byte(body), func(role, content string) bool {
			turns++
			return o.Turn(role, content)
		})
		if aerr != nil {
			continue
		}
		if got, want := o.ID(f.Messages), affinity.Opening(nil, f.Messages); got != want {
			t.Errorf("%s: opening %+v from the walk, %+v read again", body, got, want)
		}
		n := 0
		for w := jsonscan.Walk(string(f.Messages), 0); w.Next(); {
			n++
		}
		if turns > n {
			t.Errorf("%s: %d turns handed over, more than the messages", body, turns)
		}
	}
}

// chatBody is an agent's chat request, about 20 KB: a system prompt of
// 2 KB paragraphs (escaped quotes and newlines), four tools, ten rounds
// of tool calls and results.
func chatBody() []byte {
	para := strings.Repeat(`Use this tool to run a command. Do not use it for \"dangerous\" things.\n - Always quote paths with spaces.\n`, 20)
	var b strings.Builder
	b.WriteString(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":4096,"messages":[{"role":"system","content":"` + strings.Repeat(para, 4) + `"},{"role":"user","content":"start"}`)
	for i := range 10 {
		fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"run","arguments":"{\"command\":\"ls -la /src\"}"}}]},{"role":"tool","tool_call_id":"call_%d","content":"%s"}`, i, i, para[:600])
	}
	b.WriteString(`],"tools":[`)
	for i := range 4 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"function","function":{"name":"t%d","description":"%s","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}`, i, para[:400])
	}
	b.WriteString(`],"prompt_cache_key":null}`)
	return []byte(b.String())
}

// BenchmarkParse: an agent's 20 KB chat request read (the check, the
// fields, the messages' roles) and its opening kept.
func BenchmarkParse(b *testing.B) {
	body := chatBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var o affinity.Turns
		f, aerr := ParseTurns(provider.OpChat, body, o.Turn)
		if aerr != nil {
			b.Fatal(aerr)
		}
		_ = o.ID(f.Messages)
	}
}
