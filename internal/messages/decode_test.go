package messages

import (
	"reflect"
	"strings"
	"testing"
)

// req is a valid request with extra top-level members (a JSON fragment
// with a leading comma, or "") and the given messages.
func req(extra, msgs string) string {
	return `{"model":"claude-x","max_tokens":64` + extra + `,"messages":` + msgs + `}`
}

// user is a messages list with one user turn of the given content.
func user(content string) string { return `[{"role":"user","content":` + content + `}]` }

// refusalTests are TestDecodeRefusals' cases.
var refusalTests = []struct {
	name, body, want string
}{
	// Required fields.
	{"not an object", `[1]`, "the request body must be a JSON object"},
	{"no model", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model: Field required"},
	{"model not a string", `{"model":5,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model: Input should be a valid string"},
	{"model null", `{"model":null,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model: Input should be a valid string"},
	{"empty model", `{"model":"","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model: String should have at least 1 character"},
	{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},
	{"max_tokens null", `{"model":"m","max_tokens":null,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Input should be a valid integer"},
	{"max_tokens a string", `{"model":"m","max_tokens":"5","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Input should be a valid integer"},
	{"max_tokens fractional", `{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Input should be a valid integer, got a number with a fractional part"},
	{"max_tokens 1e999", `{"model":"m","max_tokens":1e999,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Input should be less than or equal to 2147483648"},
	{"max_tokens 2^31+1", `{"model":"m","max_tokens":2147483649,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Input should be less than or equal to 2147483648"},
	{"max_tokens 0", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Input should be greater than or equal to 1"},
	{"max_tokens negative", `{"model":"m","max_tokens":-3,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Input should be greater than or equal to 1"},
	{"no messages", `{"model":"m","max_tokens":5}`, "messages: Field required"},
	{"messages an object", `{"model":"m","max_tokens":5,"messages":{}}`, "messages: Input should be a valid list"},
	{"empty messages", `{"model":"m","max_tokens":5,"messages":[]}`, "messages: at least one message is required"},

	// Messages.
	{"message not an object", req("", `["hi"]`), "messages.0: Input should be a valid dictionary"},
	{"no role", req("", `[{"content":"hi"}]`), "messages.0.role: Field required"},
	{"role not a string", req("", `[{"role":1,"content":"hi"}]`), "messages.0.role: Input should be a valid string"},
	{"tool role", req("", `[{"role":"user","content":"a"},{"role":"tool","content":"x"}]`), "messages.1.role: Input should be 'user', 'assistant' or 'system'"},
	{"system turn with a bad block", req("", `[{"role":"system","content":[{"type":"text"}]}]`), "messages.0.content.0.text: Field required"},
	{"no content", req("", `[{"role":"user"}]`), "messages.0.content: Field required"},
	{"content a number", req("", `[{"role":"user","content":5}]`), "messages.0.content: Input should be a valid list"},
	{"content null", req("", `[{"role":"user","content":null}]`), "messages.0.content: Input should be a valid list"},

	// Blocks.
	{"block not an object", req("", user(`["hi"]`)), "messages.0.content.0: Input should be a valid dictionary"},
	{"block without type", req("", user(`[{"text":"hi"}]`)), "messages.0.content.0: Unable to extract tag using discriminator 'type'"},
	{"block type a number", req("", user(`[{"type":"text","text":"a"},{"type":7}]`)),
		"messages.0.content.1: Input tag '7' found using 'type' does not match any of the expected tags: 'text', 'image', 'document', 'search_result', 'thinking', 'redacted_thinking', 'tool_use', 'tool_result', 'server_tool_use', 'web_search_tool_result'"},
	{"text without text", req("", user(`[{"type":"text"}]`)), "messages.0.content.0.text: Field required"},
	{"text not a string", req("", user(`[{"type":"text","text":["a"]}]`)), "messages.0.content.0.text: Input should be a valid string"},
	{"image without source", req("", user(`[{"type":"image"}]`)), "messages.0.content.0.source: Field required"},
	{"image source a string", req("", user(`[{"type":"image","source":"https://x/a.png"}]`)), "messages.0.content.0.source: Input should be a valid dictionary"},
	{"image source without type", req("", user(`[{"type":"image","source":{"url":"https://x"}}]`)), "messages.0.content.0.source: Unable to extract tag using discriminator 'type'"},
	{"base64 image without data", req("", user(`[{"type":"image","source":{"type":"base64","media_type":"image/png"}}]`)), "messages.0.content.0.source.data: Field required"},
	{"base64 image of a type Anthropic refuses", req("", user(`[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"AA"}}]`)),
		"messages.0.content.0.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
	{"url image without url", req("", user(`[{"type":"image","source":{"type":"url"}}]`)), "messages.0.content.0.source.url: Field required"},
	{"document without source", req("", user(`[{"type":"document"}]`)), "messages.0.content.0.source: Field required"},
	{"tool_use without id", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`,
		"messages.1.content.0.id: Field required"},
	{"tool_use without name", req("", `[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]`), "messages.0.content.0.name: Field required"},
	{"tool_use input a string", req("", `[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"{}"}]}]`), "messages.0.content.0.input: Input should be a valid dictionary"},
	{"tool_use without input", req("", `[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f"}]}]`), "messages.0.content.0.input: Field required"},
	{"tool_result without id", req("", user(`[{"type":"tool_result","content":"x"}]`)), "messages.0.content.0.tool_use_id: Field required"},
	{"tool_result id a number", req("", user(`[{"type":"tool_result","tool_use_id":1}]`)), "messages.0.content.0.tool_use_id: Input should be a valid string"},
	{"tool_result content a number", req("", user(`[{"type":"tool_result","tool_use_id":"t","content":1}]`)), "messages.0.content.0.content: Input should be a valid list"},
	{"tool_result is_error a string", req("", user(`[{"type":"tool_result","tool_use_id":"t","is_error":"yes"}]`)), "messages.0.content.0.is_error: Input should be a valid boolean"},
	{"tool_result block without text", req("", user(`[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"},{"type":"text"}]}]`)),
		"messages.0.content.1.content.1.text: Field required"},
	{"thinking without signature", req("", `[{"role":"assistant","content":[{"type":"thinking","thinking":"hm"}]}]`), "messages.0.content.0.signature: Field required"},
	{"redacted_thinking without data", req("", `[{"role":"assistant","content":[{"type":"redacted_thinking"}]}]`), "messages.0.content.0.data: Field required"},

	// System.
	{"system a number", req(`,"system":1`, user(`"hi"`)), "system: Input should be a valid list"},
	{"system block not text", req(`,"system":[{"type":"image","source":{}}]`, user(`"hi"`)), "system.0.type: Input should be 'text'"},
	{"system block without type", req(`,"system":[{"type":"text","text":"a"},{"text":"b"}]`, user(`"hi"`)), "system.1.type: Field required"},
	{"system block without text", req(`,"system":[{"type":"text"}]`, user(`"hi"`)), "system.0.text: Field required"},

	// Other fields.
	{"stream a string", req(`,"stream":"true"`, user(`"hi"`)), "stream: Input should be a valid boolean"},
	{"temperature a string", req(`,"temperature":"0.5"`, user(`"hi"`)), "temperature: Input should be a valid number"},
	{"top_p a bool", req(`,"top_p":true`, user(`"hi"`)), "top_p: Input should be a valid number"},
	{"top_k fractional", req(`,"top_k":2.5`, user(`"hi"`)), "top_k: Input should be a valid integer, got a number with a fractional part"},
	{"stop_sequences a string", req(`,"stop_sequences":"END"`, user(`"hi"`)), "stop_sequences: Input should be a valid list"},
	{"stop sequence a number", req(`,"stop_sequences":["a",1]`, user(`"hi"`)), "stop_sequences.1: Input should be a valid string"},
	{"tools an object", req(`,"tools":{}`, user(`"hi"`)), "tools: Input should be a valid list"},
	{"tool not an object", req(`,"tools":[1]`, user(`"hi"`)), "tools.0: Input should be a valid dictionary"},
	{"tool without name", req(`,"tools":[{"input_schema":{"type":"object"}}]`, user(`"hi"`)), "tools.0.name: Field required"},
	{"tool name with a space", req(`,"tools":[{"name":"get weather","input_schema":{"type":"object"}}]`, user(`"hi"`)), "tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"},
	{"tool without schema", req(`,"tools":[{"name":"a","input_schema":{}},{"name":"x"}]`, user(`"hi"`)), "tools.1.input_schema: Field required"},
	{"custom tool without schema", req(`,"tools":[{"type":"custom","name":"x"}]`, user(`"hi"`)), "tools.0.input_schema: Field required"},
	{"tool schema a string", req(`,"tools":[{"name":"x","input_schema":"{}"}]`, user(`"hi"`)), "tools.0.input_schema: Input should be a valid dictionary"},
	{"tool description a number", req(`,"tools":[{"name":"x","description":1,"input_schema":{}}]`, user(`"hi"`)), "tools.0.description: Input should be a valid string"},
	{"tool type a number", req(`,"tools":[{"type":1,"name":"x","input_schema":{}}]`, user(`"hi"`)), "tools.0.type: Input should be a valid string"},
	{"tool_choice a string", req(`,"tool_choice":"auto"`, user(`"hi"`)), "tool_choice: Input should be a valid dictionary"},
	{"tool_choice without type", req(`,"tool_choice":{}`, user(`"hi"`)), "tool_choice: Unable to extract tag using discriminator 'type'"},
	{"tool_choice of an unknown type", req(`,"tool_choice":{"type":"required"}`, user(`"hi"`)),
		"tool_choice: Input tag 'required' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'"},
	{"tool_choice tool without name", req(`,"tool_choice":{"type":"tool"}`, user(`"hi"`)), "tool_choice.name: Field required"},
	{"disable_parallel_tool_use a string", req(`,"tool_choice":{"type":"auto","disable_parallel_tool_use":"yes"}`, user(`"hi"`)),
		"tool_choice.disable_parallel_tool_use: Input should be a valid boolean"},
	{"metadata a string", req(`,"metadata":"u"`, user(`"hi"`)), "metadata: Input should be a valid dictionary"},
	{"user_id a number", req(`,"metadata":{"user_id":5}`, user(`"hi"`)), "metadata.user_id: Input should be a valid string"},
	{"thinking a string", req(`,"thinking":"on"`, user(`"hi"`)), "thinking: Input should be a valid dictionary"},
	{"thinking without type", req(`,"thinking":{"budget_tokens":100}`, user(`"hi"`)), "thinking: Unable to extract tag using discriminator 'type'"},
}

// TestDecodeRefusals: each malformed request → Anthropic's 400 naming
// the field.
func TestDecodeRefusals(t *testing.T) {
	tests := refusalTests
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := Decode([]byte(tt.body))
			if e == nil {
				t.Fatalf("Decode accepted %s", tt.body)
			}
			if e.Status != 400 || e.Type != "invalid_request_error" || e.Message != tt.want {
				t.Errorf("got %d %s %q,\nwant 400 invalid_request_error %q", e.Status, e.Type, e.Message, tt.want)
			}
			if e.Error() != e.Message {
				t.Errorf("Error() = %q, want the message", e.Error())
			}
		})
	}
}

// acceptTests are TestDecodeAccepts' cases.
var acceptTests = []struct {
	name, body string
	want       Request // ModelStart and ModelEnd checked apart
}{
	{"minimal", `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
		Request{Model: "claude-x", MaxTokens: 64}},
	{"system turns inside messages (Claude Code 2.1.33x)", req("", `[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"# Environment"}]},{"role":"system","content":"note"}]`),
		Request{Model: "claude-x", MaxTokens: 64}},
	{"stream, user id, integral float", `{"stream":true,"metadata":{"user_id":"u-1"},"max_tokens":1.0,"model":"m\u00e9","messages":[{"role":"user","content":"hi"}]}`,
		Request{Model: "mé", MaxTokens: 1, Stream: true, UserID: "u-1"}},
	{"nulls for optional fields", req(`,"stream":null,"system":null,"temperature":null,"top_p":null,"top_k":null,"stop_sequences":null,"tools":null,"tool_choice":null,"metadata":{"user_id":null},"thinking":null`, user(`"hi"`)),
		Request{Model: "claude-x", MaxTokens: 64}},
	{"unknown fields and block types pass", req(`,"context_management":{"edits":[]},"output_config":{"effort":"medium"},"service_tier":"auto","container":"c","mcp_servers":[]`,
		user(`[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"citations_delta_2099"},{"type":"search_result","source":"s","title":"t","content":[]}]`)),
		Request{Model: "claude-x", MaxTokens: 64}},
	{"every known block", req(`,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}]`,
		`[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
		   {"type":"image","source":{"type":"url","url":"https://x/a.png"}},{"type":"image","source":{"type":"file","file_id":"f"}},
		   {"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc"}}]},
		  {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},
		   {"type":"text","text":"calling"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}},
		   {"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]},
		  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"url","url":"https://x"}}],"is_error":false},
		   {"type":"tool_result","tool_use_id":"toolu_2","content":"plain"},{"type":"tool_result","tool_use_id":"toolu_3"}]}]`),
		Request{Model: "claude-x", MaxTokens: 64}},
	{"tools and choices", req(`,"tools":[{"name":"get_weather","description":"d","input_schema":{"type":"object"}},{"type":"custom","name":"x","input_schema":{}},
		  {"type":"web_search_20250305","name":"web_search","max_uses":3},{"type":"bash_20250124","name":"bash"}],"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}`, user(`"hi"`)),
		Request{Model: "claude-x", MaxTokens: 64}},
	{"thinking of a newer type", req(`,"thinking":{"type":"adaptive","display":"omitted"}`, user(`"hi"`)), Request{Model: "claude-x", MaxTokens: 64}},
	{"a repeated key inside a message: the first counts", req("", `[{"role":"user","content":"hi","content":5}]`), Request{Model: "claude-x", MaxTokens: 64}},
}

// TestDecodeAccepts: valid requests → the fields the router reads.
func TestDecodeAccepts(t *testing.T) {
	tests := acceptTests
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, e := Decode([]byte(tt.body))
			if e != nil {
				t.Fatalf("Decode refused: %v", e)
			}
			lit := tt.body[got.ModelStart:got.ModelEnd]
			got.ModelStart, got.ModelEnd = 0, 0
			if !strings.Contains(tt.body, `"messages":`+string(got.Messages)) || !strings.HasPrefix(string(got.Messages), "[") {
				t.Errorf("messages hold %q", got.Messages)
			}
			if got.System != nil && !strings.Contains(tt.body, `"system":`+string(got.System)) {
				t.Errorf("system holds %q", got.System)
			}
			got.System, got.Messages = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if !strings.HasPrefix(lit, `"`) || !strings.HasSuffix(lit, `"`) || !strings.Contains(tt.body, `"model":`+lit) {
				t.Errorf("model offsets hold %q", lit)
			}
		})
	}
}

// TestDecodeCount: count_tokens takes the body without max_tokens, and
// ignores max_tokens and stream whatever they hold.
func TestDecodeCount(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":"x","stream":"y","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		got, e := DecodeCount([]byte(body))
		if e != nil {
			t.Fatalf("DecodeCount(%s): %v", body, e)
		}
		if got.Model != "m" || got.MaxTokens != 0 || got.Stream {
			t.Errorf("DecodeCount(%s) = %+v", body, got)
		}
	}
	for body, want := range map[string]string{
		`{"model":"m"}`: "messages: Field required",
		`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`:           "model: Field required",
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`: "messages.0.content.0.text: Field required",
	} {
		if _, e := DecodeCount([]byte(body)); e == nil || e.Message != want {
			t.Errorf("DecodeCount(%s) = %v, want %q", body, e, want)
		}
	}
}

// TestDecodeDoesNotAlias: the strings of a Request survive the body.
func TestDecodeDoesNotAlias(t *testing.T) {
	body := []byte(`{"model":"claude-x","max_tokens":5,"metadata":{"user_id":"u-1"},"messages":[{"role":"user","content":"hi"}]}`)
	r, e := Decode(body)
	if e != nil {
		t.Fatal(e)
	}
	for i := range body {
		body[i] = 'z'
	}
	if r.Model != "claude-x" || r.UserID != "u-1" {
		t.Errorf("got %q %q after the body changed", r.Model, r.UserID)
	}
}

func TestDecodeAllocs(t *testing.T) {
	body := []byte(req(`,"system":[{"type":"text","text":"be brief"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]`,
		`[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},
		  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}]}]}]`))
	// The model's clone is the only allocation.
	if n := testing.AllocsPerRun(100, func() { _, _ = Decode(body) }); n > 1 {
		t.Errorf("Decode allocates %v times, want at most 1", n)
	}
}

// refusalBodies and acceptBodies are the bodies of TestDecodeRefusals and
// TestDecodeAccepts (inputs of decode.golden).
func refusalBodies() (b []string) {
	for _, tt := range refusalTests {
		b = append(b, tt.body)
	}
	return b
}

func acceptBodies() (b []string) {
	for _, tt := range acceptTests {
		b = append(b, tt.body)
	}
	return b
}
