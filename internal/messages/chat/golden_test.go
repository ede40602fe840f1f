package chat

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/goldentest"

	"github.com/llmrouter/llmrouter/internal/messages"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// literal is s as a Go string literal, raw where it can be.
func literal(s string) string {
	if strconv.CanBackquote(s) && !strings.Contains(s, "\n") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// randomID is an id appendRandom made: what two runs cannot share.
var randomID = regexp.MustCompile(`"(toolu_|msg_)[a-zA-Z0-9]{24}"`)

// norm is out with its random ids made the same.
func norm(out []byte) string { return randomID.ReplaceAllString(string(out), `"$1random"`) }

// chunkCases are events.golden's streams: chunks of every shape, keys
// repeated or escaped, a delta before the index, choices an object, tool
// calls a scalar, whitespace anywhere.
var chunkCases = map[string][]string{
	"fuzz seed 1": {chunk(`{"content":"hi\\n"}`, ""), chunk(call(0, "c.1", "f", `"{\\"a\\""`), "tool_calls")},
	"fuzz seed 2": {`{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"arguments":{"k":"\\u2028"}}}]}}]}`, usageChunk},
	"fuzz seed 3": {`{"choices":[{"delta":{"content":"a"},"index":0,"delta":{"tool_calls":null}}],"choices":{"x":{"d\\u0065lta":{"content":"\\\\"}}}}`,
		`{"choices":[{"index":"0","delta":{"tool_calls":[{"index":1,"index":0,"function":{"name":"f","name":"g","arguments":{"a":[]}}}]},"finish_reason":"length"}]}`},
	"text":        {chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"Hel"}`, ""), chunk(`{"content":"lo \"you\"\n\u2028"}`, ""), chunk(`{}`, "stop"), usageChunk},
	"tool calls":  {chunk(call(0, "call_1", "get_weather", `""`), ""), chunk(call(0, "", "", `"{\"city\":"`), ""), chunk(call(1, "call:2", "noop", `"{}"`), ""), chunk(`{}`, "tool_calls")},
	"object args": {`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":"\u00e9\n"}}}]}}]}`},
	"late piece":  {chunk(call(0, "call_1", "f", `"{"`), ""), chunk(call(1, "call_2", "g", `"{}"`), ""), chunk(call(0, "", "", `"}"`), "")},
	"keys repeated": {
		`{"id":"a","id":"b","choices":[{"index":0,"delta":{"content":"x"}}],"choices":[{"index":0,"delta":{"content":"y","content":"z","refusal":"r"},"delta":{"content":"w"},"finish_reason":"length","finish_reason":null}],"usage":{"prompt_tokens":5},"usage":null}`,
		`{"choices":[{"index":0,"index":1,"delta":{"tool_calls":[{"index":0,"index":2,"id":"p","id":"q","function":{"name":"n","name":"m","arguments":"{}","arguments":"[]"},"function":{"name":"o","arguments":"\"\""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"r","function":{"name":"n","name":"m","arguments":"{}","arguments":"[]"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":4,"id":"s","function":{"name":"a","arguments":"{}"},"function":{"name":"b"}}]}}]}`,
	},
	"keys escaped": {`{"i\u0064":"\u0061b","ch\u006fices":[{"ind\u0065x":0,"d\u0065lta":{"c\u006fntent":"x","tool_c\u0061lls":[{"\u0069d":"c\u0031","function":{"n\u0061me":"f\u00e9","\u0061rguments":"{}"}}]},"finish_re\u0061son":"to\u006fl_calls"}]}`},
	"delta before index": {
		`{"choices":[{"delta":{"content":"a"},"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`,
		`{"choices":[{"delta":{"content":"c"},"index":1},{"finish_reason":"length","delta":{"content":"d"}}]}`,
		`{"choices":[{"delta":{"content":"e"},"index":0,"logprobs":{"content":"no"},"delta":{"content":"f"}}]}`,
	},
	"indexes": {
		`{"choices":[{"index":"0","delta":{"content":"s"}},{"index":0.5,"delta":{"content":"f"}},{"index":-0,"delta":{"content":"m"}},{"index":null,"delta":{"content":"n"}},{"index":true,"delta":{"content":"t"}},{"index":1e0,"delta":{"content":"e"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"1","function":{"arguments":"a"}},{"index":1.0,"function":{"arguments":"b"}},{"index":12345678901234567890,"function":{"arguments":"c"}},{"index":-3,"function":{"arguments":"d"}}]}}]}`,
	},
	"choices before the id":   {`{"choices":[{"delta":{"content":"a"}}],"id":"late"}`, `{"choices":[{"delta":{"content":"b"}}]}`},
	"choices, id, choices":    {`{"choices":[{"delta":{"content":"a"}}],"id":"late","choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":2}}`},
	"choices, usage, choices": {`{"id":"x","choices":[{"delta":{"content":"a"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":2},"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"f"}}]}}]}`, `{"choices":[{"delta":{"content":"b"}}],"choices":[]}`},
	"heads repeated": {
		`{"id":"h","created":1,"choices":[{"delta":{"content":"a"}}]}`, `{"id":"h","created":1,"choices":[{"delta":{"content":"b"}}],"choices":[{"delta":{"content":"c"}}]}`,
		`{"id":"h","created":2,"choices":[{"delta":{"content":"d"}}]}`, `{"id":"h","created":2,"choices":[{"delta":{"content":"e"}}],"usage":{"prompt_tokens":3}}`,
		`{"id":"h"}`, `{"id":"h","created":2,"choices":7}`, `{"id":"h","created":2,"choices":[{"delta":{"content":"f"},"finish_reason":"stop"}]}`,
	},
	"heads with usage": {
		`{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"}}]}`, `{"usage":{"prompt_tokens":2},"choices":[{"delta":{"content":"b"}}]}`,
		`{"usage":{"prompt_tokens":2},"choices":[{"delta":{"content":"c"}}]}`, `{"choices":[{"delta":{"content":"d"}}],"usage":null}`,
		`{"choices":[{"delta":{"content":"e"}}],"usage":{"completion_tokens":9}}`,
	},
	"heads after usage": {
		`{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"}}]}`, `{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"}}]}`,
		`{"usage":{"prompt_tokens":1},"choices":[],"usage":{"prompt_tokens":5}}`, `{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"b"}}]}`,
	},
	"heads, choices twice": {
		`{"choices":[],"id":"x","choices":[{"delta":{"content":"a"}}]}`, `{"choices":[],"id":"x","choices":[{"delta":{"content":"b"}}]}`,
		`{"choices":[{"delta":{"content":"c"}}],"id":"x","choices":[]}`,
	},
	"choices an object":   {`{"choices":{"a":{"index":0,"delta":{"content":"o"}},"b":"x","c":[{"delta":{"content":"no"}}]}}`},
	"choices scalars":     {`{"choices":"x"}`, `{"choices":null}`, `{"choices":[null,1,"s",[{"delta":{"content":"no"}}]]}`},
	"deltas not objects":  {`{"choices":[{"delta":"x"},{"delta":["content","x"]},{"delta":null}]}`},
	"tool calls scalars":  {`{"choices":[{"delta":{"tool_calls":null}}]}`, `{"choices":[{"delta":{"tool_calls":[null,1,{"function":"f"},{"function":[{"name":"x"}]}]}}]}`, `{"choices":[{"delta":{"tool_calls":{"a":{"id":"z","function":{"name":"g"}}}}}]}`},
	"content not text":    {`{"choices":[{"delta":{"content":1,"refusal":["x"]}}]}`, `{"choices":[{"delta":{"content":"","refusal":"no"}}]}`},
	"whitespace":          {" \t\r\n{ \"id\" : \"w\" , \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"a\\\\\" , \"tool_calls\" : [ { \"id\" : \"t\" , \"function\" : { \"name\" : \"f\" , \"arguments\" : { \"k\" : [ 1 , { } ] } } } ] } , \"finish_reason\" : \"stop\" } ] , \"usage\" : { \"prompt_tokens\" : 3 } } \n"},
	"not chunks":          {`{"choices":[{"delta":{"content":"a"}}]}`, `[1]`},
	"strings with quotes": {`{"id":"a\\","choices":[{"delta":{"content":"\\\"}\\","tool_calls":[{"id":"\\\"","function":{"name":"\"]}","arguments":"\\"}}]}}]}`},
}

// answerCases are answer.golden's chat completions, of every shape.
var answerCases = []string{
	`{"id":"x","choices":[{"index":0,"message":{"content":"hi","tool_calls":[{"id":"a b","function":{"name":"f","arguments":"{\\"k\\":1}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}`,
	`{"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
	`{"id":"a","id":"b","choices":[{"message":{"content":"x","content":"y","refusal":"no\u0021","tool_calls":[{"id":"c.1","function":{"name":"f","name":"g","arguments":"{\"a\":1}","arguments":"{}"},"function":{"name":"h"}},{"function":"f"},null,7,{"id":"d","function":{"arguments":{"k":[1,"\u2028"]}}},{"function":{"name":"i","arguments":" {\"x\":[]} "}},{"function":{"name":"j","arguments":"[1]"}},{"function":{"name":"k","arguments":"{\"a\""}}]},"message":{"content":"z"},"finish_reason":"stop","finish_reason":"length"}],"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":4,"cached_tokens":2},"completion_tokens":"3"},"usage":null}`,
	`{"\u0069d":"e","ch\u006fices":[{"m\u0065ssage":{"c\u006fntent":"\u00e9\n","tool_c\u0061lls":{"a":{"function":{"n\u0061me":"f","arguments":"{}"}}}},"finish_re\u0061son":"to\u006fl_calls"}],"us\u0061ge":{"prompt_t\u006fkens":5.0,"completion_tokens":-2,"prompt_tokens_details":{"cached_tokens":9}}}`,
	`{"choices":[{"message":"x","finish_reason":7}]}`,
	`{"choices":[{"message":[{"content":"no"}]}],"usage":{"prompt_tokens":1e2,"prompt_tokens_details":[{"cached_tokens":1}]}}`,
	`{"choices":[{"message":{"content":"","refusal":null,"tool_calls":null}}],"usage":[]}`,
	`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f"}}]},"finish_reason":"stop"}]}`,
	` {"choices" : [ { "message" : { "content" : "a" } } , 1 ] } `,
	`{"choices":[1]}`, `{"choices":{"0":{}}}`, `{"choices":[]}`, `{}`, `[1]`, `"x"`, `{"choices":`, ``,
}

// translateCases are translate.golden's requests: the Claude Code
// bodies, every block and tool, strings with every escape, keys escaped,
// whitespace, and the fuzz targets' seeds.
func translateCases() []string {
	return []string{
		claudeCodeBody(),
		conversationBody(),
		`{"model":"m","max_tokens":5,"system":"s\u0041\/\n\u00e9\ud83d\ude00","messages":[{"role":"user","content":"a\"b\\c\u001f\u2028é"}],"stop_sequences":["x","\u0078"],"temperature":1e400,"top_p":-0.0}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":""},{"type":"text","text":"a","text":"b"}],"messages":[{"role":"user","content":[{"type":"text","text":"t"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA\n"}},{"type":"image","source":{"type":"url","url":"https://x/\u0079"}},{"type":"document","source":{"type":"text","data":"doc"}},{"type":"newer","text":"n"},{"type":"image","source":{"type":"file","file_id":"f"}}]},{"role":"assistant","content":"ok"},{"role":"system","content":[{"type":"text","text":"env"}]},{"role":"user","content":[{"type":"document","source":{"type":"text","data":"only"}}]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","description":"d\"\n","input_schema":{"type":"object","properties":{"a":{"type":"string"}}}},{"type":"custom","name":"g","input_schema":{}},{"type":null,"name":"h","description":"","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"w"},{"name":"x\u0041","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"xA","disable_parallel_tool_use":true},
		  "messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":""},{"type":"tool_use","id":"a","name":"f","input":{"k":[1,{"x":null}]}},{"type":"tool_use","id":"b\u0042","name":"g","input":{"q":"\u00e9"}}]},
		  {"role":"user","content":[{"type":"text","text":"r"},{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"url","url":"u"}},{"type":"text","text":"\u0000"}],"is_error":true},{"type":"tool_result","tool_use_id":"b","content":"plain"},{"type":"tool_result","tool_use_id":"c"}]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"missing"},"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"stop_sequences":null,"temperature":0.25,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":null}]}]}`,
		`{"model":"m","max_tokens":5,"system":"","tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":false},"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":5,"system":[],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"none","disable_parallel_tool_use":null},"messages":[{"role":"user","content":""}]}`,
		` { "model" : "m" , "max_tokens" : 5 , "stream" : true , "messages" : [ { "role" : "user" , "content" : [ { "type" : "text" , "text" : "spaced" } , { "type" : "text" , "text" : "out" } ] } ] } `,
		`{"model":"m","max_tokens":5,"ro\u006ce":"x","m\u0065ssages":[{"r\u006fle":"user","c\u006fntent":"escaped keys"}]}`,
		// More blocks in one turn than the translator keeps on its frame.
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"t"},{"type":"tool_result","tool_use_id":"r","content":"c"},{"type":"image","source":{"type":"url","url":"u"}},`, 7) + `{"type":"text","text":"last"}]},` +
			`{"role":"assistant","content":[` + strings.Repeat(`{"type":"text","text":"a"},{"type":"tool_use","id":"i","name":"f","input":{"k":1}},`, 10) + `{"type":"thinking","thinking":"x","signature":"s"}]}]}`,
		// Content before role, keys repeated at every level, sources that
		// are not objects, tool results of objects and scalars.
		`{"model":"m","max_tokens":5,"messages":[{"content":[{"text":"first","type":"text","text":"second","type":"image"}],"role":"user","content":"later","role":"assistant"},` +
			`{"content":[{"type":"image","source":{"type":"url","url":"u"},"source":"x"},{"type":"image","source":{"type":"base64","type":"url","media_type":"image/png","data":"AA","data":"BB","url":"v"}},{"type":"document","source":{"data":"d","type":"text"}}],"role":"user"},` +
			`{"role":"system","content":[{"type":"text","text":"s1"},{"type":"text","text":"s2","text":"s3"}]},` +
			`{"role":"assistant","content":[{"input":{"q":[1]},"type":"tool_use","name":"f","id":"a","id":"b"},{"type":"tool_use","id":"c","name":"g","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","tool_use_id":"z","content":[{"type":"text","text":"o1"},{"type":"text","text":"o2","text":"o3"}]},{"type":"tool_result","tool_use_id":"b","content":[{"type":"image","source":{"type":"url","url":"u"}},{"type":"text","text":"yes"}]},{"type":"tool_result","tool_use_id":"c","content":null}]}]}`,
	}
}

// TestTranslateGolden: the chat request each body of translate.golden
// translates into (its body, the model's offsets, stream, the estimate).
func TestTranslateGolden(t *testing.T) {
	var b strings.Builder
	bodies := append(append(translateCases(), decodeTranslateSeeds()...), translateFormSeeds()...)
	for i, body := range bodies {
		fmt.Fprintf(&b, "# %d\nbody: %s\n", i, literal(body))
		req, e := messages.Decode([]byte(body))
		if e != nil {
			fmt.Fprintf(&b, "decode refused: %s\n", e.Message)
			continue
		}
		tr, e := Translate([]byte(body), req)
		if e != nil {
			fmt.Fprintf(&b, "refused: %s\n", e.Message)
			continue
		}
		fmt.Fprintf(&b, "chat: %s\nmodel: %q %d:%d stream=%v estimate=%d\n", literal(string(tr.Body)), tr.model, tr.ModelStart, tr.ModelEnd, tr.Stream, tr.estimate)
	}
	goldentest.Check(t, "translate.golden", b.String())
}

// TestAnswerGolden: the message each chat completion of answer.golden
// becomes, or the refusal.
func TestAnswerGolden(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	var b strings.Builder
	for i, chat := range answerCases {
		fmt.Fprintf(&b, "# %d\nchat: %s\n", i, literal(chat))
		msg, err := tr.Answer([]byte(chat))
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			continue
		}
		fmt.Fprintf(&b, "message: %s\n", literal(norm(msg)))
	}
	goldentest.Check(t, "answer.golden", b.String())
}

// TestEventsGolden: the events each stream of events.golden becomes,
// chunk by chunk, ended well and cut.
func TestEventsGolden(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	names := make([]string, 0, len(chunkCases))
	for name := range chunkCases {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		for _, fail := range []bool{false, true} {
			fmt.Fprintf(&b, "# %s (cut %v)\n", name, fail)
			ev := tr.Events()
			cut := fail
			for _, c := range chunkCases[name] {
				out, err := ev.Chunk(nil, []byte(c))
				fmt.Fprintf(&b, "chunk: %s\nevents: %s\n", literal(c), literal(norm(out)))
				if err != nil {
					fmt.Fprintf(&b, "error: %v\n", err)
					cut = true
					break
				}
			}
			if cut {
				fmt.Fprintf(&b, "fail: %s\n", literal(norm(ev.Fail(nil, outcome.Network))))
			} else {
				fmt.Fprintf(&b, "end: %s\n", literal(norm(ev.End(nil))))
			}
		}
	}
	goldentest.Check(t, "events.golden", b.String())
}
