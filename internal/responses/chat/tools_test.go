package chat

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/responses/store"
)

// codexTools are the tool types Codex CLI sends (captured from 0.171):
// a function, a namespace of functions, web_search, and (with code mode)
// a custom tool with a grammar.
const codexTools = `"tools":[{"type":"function","name":"exec_command","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},
{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[
 {"type":"function","name":"close_agent","description":"Close one.","strict":false,"parameters":{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}}]},
{"type":"web_search","external_web_access":false},
{"type":"custom","name":"exec","description":"Run JavaScript.","format":{"type":"grammar","syntax":"lark","definition":"start: SOURCE"}}]`

// TestTranslateCodexTools: Codex's tools on chat. The namespace's
// function is a function of a flat name, the custom tool a function of
// one string argument whose description carries the grammar, web_search
// is left out; a namespaced call and a custom tool's call and output in
// the history go under the same names, a custom call's input as the
// argument.
func TestTranslateCodexTools(t *testing.T) {
	tr := translate(t, store.NewMemory(store.Config{}, nil), `{"model":"m","store":false,`+codexTools+`,"input":[
		{"role":"user","content":"go"},
		{"type":"function_call","call_id":"call_1","name":"close_agent","namespace":"multi_agent_v1","arguments":"{\"target\":\"a\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"closed"},
		{"type":"custom_tool_call","call_id":"call_2","name":"exec","input":"text(1)"},
		{"type":"custom_tool_call_output","call_id":"call_2","output":"1"}]}`)
	b := gjson.ParseBytes(tr.Body)
	var names []string
	for _, f := range b.Get("tools.#.function").Array() {
		names = append(names, f.Get("name").Str)
	}
	if got := strings.Join(names, " "); got != "exec_command multi_agent_v1__close_agent exec" {
		t.Errorf("chat tools %q, want exec_command multi_agent_v1__close_agent exec (web_search left out)", got)
	}
	if strings.Contains(b.Raw, "web_search") {
		t.Errorf("the built-in tool went on chat: %s", tr.Body)
	}
	custom := b.Get(`tools.#(function.name=="exec").function`)
	if custom.Get("parameters.properties.input.type").Str != "string" || custom.Get("parameters.required.0").Str != "input" ||
		!strings.Contains(custom.Get("description").Str, "lark grammar:\nstart: SOURCE") || !strings.HasPrefix(custom.Get("description").Str, "Run JavaScript.") {
		t.Errorf("the custom tool on chat: %s", custom.Raw)
	}
	calls := b.Get("messages.#.tool_calls|@flatten").Array()
	if len(calls) != 2 || calls[0].Get("function.name").Str != "multi_agent_v1__close_agent" ||
		calls[1].Get("function.name").Str != "exec" || calls[1].Get("function.arguments").Str != `{"input":"text(1)"}` {
		t.Errorf("calls in the history: %v", calls)
	}
	if got := b.Get(`messages.#(tool_call_id=="call_2").content`).Str; got != "1" {
		t.Errorf("the custom tool's output: %q", got)
	}
}

// TestAnswerCodexTools: a provider's calls of a flattened function and of
// a custom tool come back as the client declared them: a function_call
// with its namespace and its own name, exactly as OpenAI returns a
// namespaced call; a custom_tool_call with its input as text.
func TestAnswerCodexTools(t *testing.T) {
	tr := translate(t, store.NewMemory(store.Config{}, nil), `{"model":"m","input":"go",`+codexTools+`}`)
	out, err := tr.Answer([]byte(`{"model":"up","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"toolu_1","type":"function","function":{"name":"multi_agent_v1__close_agent","arguments":"{\"target\":\"a\"}"}},
		{"id":"toolu_2","type":"function","function":{"name":"exec","arguments":"{\"input\":\"text(1)\"}"}},
		{"id":"toolu_3","type":"function","function":{"name":"exec_command","arguments":"{\"cmd\":\"ls\"}"}}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	o := gjson.GetBytes(out, "output")
	if c := o.Get("0"); c.Get("type").Str != "function_call" || c.Get("name").Str != "close_agent" || c.Get("namespace").Str != "multi_agent_v1" ||
		c.Get("call_id").Str != "toolu_1" || !strings.HasPrefix(c.Get("id").Str, "fc_") {
		t.Errorf("namespaced call: %s", c.Raw)
	}
	if c := o.Get("1"); c.Get("type").Str != "custom_tool_call" || c.Get("name").Str != "exec" || c.Get("input").Str != "text(1)" ||
		c.Get("call_id").Str != "toolu_2" || !strings.HasPrefix(c.Get("id").Str, "ctc_") || c.Get("arguments").Exists() {
		t.Errorf("custom tool call: %s", c.Raw)
	}
	if c := o.Get("2"); c.Get("name").Str != "exec_command" || c.Get("namespace").Exists() {
		t.Errorf("plain call: %s", c.Raw)
	}
}

// TestEventsCodexTools: streamed, a namespaced call's items carry its
// namespace; a custom tool call streams its input as text
// (custom_tool_call_input.delta and .done), never the JSON arguments.
func TestEventsCodexTools(t *testing.T) {
	tr := translate(t, store.NewMemory(store.Config{}, nil), `{"model":"m","input":"go","stream":true,`+codexTools+`}`)
	e := tr.Events()
	var dst []byte
	var err error
	for _, c := range []string{
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"multi_agent_v1__close_agent","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"target\":\"a\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"t2","type":"function","function":{"name":"exec","arguments":"{\"inp"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"ut\":\"x\\ny\"}"}}]}`, "tool_calls"),
	} {
		if dst, err = e.Chunk(dst, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	evs := parseEvents(t, e.End(dst))
	want := "created in_progress output_item.added function_call_arguments.delta function_call_arguments.done output_item.done " +
		"output_item.added custom_tool_call_input.delta custom_tool_call_input.done output_item.done completed"
	if got := names(evs); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	if it := evs[2].data.Get("item"); it.Get("namespace").Str != "multi_agent_v1" || it.Get("name").Str != "close_agent" {
		t.Errorf("added: %s", it.Raw)
	}
	if it := evs[9].data.Get("item"); it.Get("type").Str != "custom_tool_call" || it.Get("input").Str != "x\ny" {
		t.Errorf("custom done: %s", it.Raw)
	}
	if d := evs[7].data.Get("delta").Str; d != "x\ny" {
		t.Errorf("custom input delta %q", d)
	}
	if got := evs[10].data.Get("response.output.1.input").Str; got != "x\ny" {
		t.Errorf("completed output: %s", evs[10].data.Get("response.output").Raw)
	}
}

// TestFlatName: a flattened name is one every provider takes
// ([A-Za-z0-9_-]{1,64}, starting with a letter or _), unique among the
// request's tool names, and the same for the same tool.
func TestFlatName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)
	long := strings.Repeat("n", 60)
	for _, tt := range []struct {
		ns, name string
		taken    []string
		want     string // "" any valid name other than the taken ones
	}{
		{"multi_agent_v1", "spawn_agent", nil, "multi_agent_v1__spawn_agent"},
		{"mcp.server", "read file", nil, ""},
		{"9ns", "f", nil, ""},
		{long, "f", nil, ""},
		{"ns", "f", []string{"ns__f"}, ""},
	} {
		taken := map[string]bool{}
		for _, n := range tt.taken {
			taken[n] = true
		}
		got := flatName(tt.ns, tt.name, taken)
		if !valid.MatchString(got) || taken[got] || tt.want != "" && got != tt.want {
			t.Errorf("flatName(%q, %q, %v) = %q, want a valid free name %q", tt.ns, tt.name, tt.taken, got, tt.want)
		}
		if again := flatName(tt.ns, tt.name, taken); again != got {
			t.Errorf("flatName(%q, %q) = %q, then %q", tt.ns, tt.name, got, again)
		}
	}
	if a, b := flatName(long, "a", nil), flatName(long, "b", nil); a == b {
		t.Errorf("two tools cut to the same name: %q", a)
	}
}
