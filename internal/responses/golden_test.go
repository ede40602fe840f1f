package responses

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/goldentest"
)

// decodeInputs are decode.golden's bodies: the decode tests' bodies,
// codexRequest, and the shapes a walk may read otherwise than
// encoding/json (keys in another case, escaped and repeated; null for
// each kind of field; a value of the wrong type at each level; numbers
// at their limits; whitespace).
func decodeInputs() []string {
	return []string{
		// TestDecodeRefuses, TestDecodeAccepts, TestDecodeNative.
		`{"input":"hi"}`,
		`{"mOdel":"m","input":"hi"}`,
		`{"model":"a","MODEL":"b","input":"hi"}`,
		`{"model":"m"}`,
		`{"model":"m","input":"hi","temperature":"hot"}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{},"strict":"yes"}}}`,
		`{"model":"m","input":"hi","tools":[{"type":"function"}]}`,
		`{"model":"m","input":"hi","tool_choice":"sometimes"}`,
		`{"model":"m","input":[{"content":"hi"}]}`,
		`{"model":"m","input":[{"role":"robot","content":"hi"}]}`,
		`{"model":"m","input":[{"role":"user"}]}`,
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x/y.png"}]}]}`,
		`{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"}]}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","schema":{}}}}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"yaml"}}}`,
		`{"model":"m","input":"hi","max_output_tokens":9000000000000000000}`,
		`{"model":"m","input":"hi","max_output_tokens":1e999}`,
		`{"model":"m","input":"hi","max_output_tokens":0}`,
		`{"model":"m","input":"hi","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`,
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":"hi"},
			{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]}]},
			{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"42"}],"text":{},"tools":[{"type":"function","name":"f","parameters":null,"strict":null}],"stream":false}`,
		`{"model":"m","input":[{"id":"msg_1"}],"store":false,"stream":true}`,
		`{"model":"m","previous_response_id":"resp_1"}`,
		`{"model":"m","input":"hi","include":["reasoning.encrypted_content"],"truncation":"disabled","background":false,"reasoning":{"effort":"low","summary":"auto"}}`,
		`{"model":"m","input":"hi","background":true}`,
		`{"model":"m","input":"hi","conversation":"conv_1"}`,
		`{"model":"m","input":"hi","prompt":{"id":"pmpt_1"}}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"code_interpreter"}}`,
		`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"computer_call_output","call_id":"c"}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`,
		`{"model":"m","input":"hi","include":["file_search_call.results"]}`,
		`{"model":"m","input":"hi","truncation":"auto"}`,
		`{"model":"m","input":"hi","top_logprobs":3}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"web_search"}]}}`,
		`{"model":"m","background":true,"input":"hi","tool_choice":{"type":"web_search"}}`,
		`{"model":"m","background":true,"input":[{"role":"robot","content":"x"}]}`,
		`{"model":"m","input":[{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"https://x"}},
			{"role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","file_id":"file_1"}]},{"role":"user","content":"plain"}]}`,
		codexRequest,

		// Every field the router reads, set.
		`{"model":"m","input":"hi","instructions":"be brief","parallel_tool_calls":false,"max_output_tokens":2147483648,"temperature":0.5,"top_p":1E+0,` +
			`"text":{"format":{"type":"json_schema","name":"n","description":"d","schema":{"type":"object"},"strict":true},"verbosity":"low"},` +
			`"reasoning":{"effort":"high","summary":null},"metadata":{"a":"b","c":""},"user":"u","safety_identifier":"s","prompt_cache_key":"k",` +
			`"service_tier":"flex","store":true,"previous_response_id":"resp_2","stream":true,"include":[],"truncation":"disabled","background":false,"top_logprobs":0,` +
			`"conversation":null,"prompt":null,"max_tool_calls":null,"context_management":null,"unknown":{"x":[1,2]}}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_object"}}}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"text"}}}`,
		`{"model":"m","input":"hi","text":{"format":null,"verbosity":"high"}}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":null}}}`,
		`{"model":"m","input":"hi","max_tool_calls":3}`,
		`{"model":"m","input":"hi","context_management":[{"type":"compaction"}]}`,
		`{"model":"m","input":"hi","include":["reasoning.encrypted_content","message.output_text.logprobs"]}`,

		// Keys in another case, escaped, repeated.
		`{"model":"m","Input":"hi","STREAM":true,"Store":false}`,
		`{"Model":"m","model":"m","input":"hi"}`,
		`{"model":"m","Model":"n","input":"hi"}`,
		`{"model":"m","MODEL":null,"input":"hi"}`,
		`{"m\u006fdel":"m","inp\u0075t":"h\u0069","t\u006fols":[{"typ\u0065":"function","n\u0061me":"f"}]}`,
		`{"model":"m","input":[{"TYPE":"message","Role":"user","CONTENT":[{"Type":"input_text","TEXT":"t"}]}]}`,
		`{"model":"m","input":[{"type":"function_call","CALL_ID":"c","Name":"f","Arguments":"{}","NameSpace":"ns"}]}`,
		`{"model":"m","input":"hi","tools":[{"TYPE":"function","NAME":"f","Description":"d","Parameters":{},"Strict":true},{"type":"custom","Name":"c","Format":{"Type":"grammar","Syntax":"regex","Definition":"a+"}}]}`,
		`{"model":"m","input":"hi","tool_choice":{"Type":"function","NAME":"f","NameSpace":"n"}}`,
		`{"model":"m","input":"hi","Text":{"FORMAT":{"TYPE":"json_object"}},"Reasoning":{"EFFORT":"low"},"MetaData":{"K":"v"}}`,
		`{"model":"m","input":"hi","ſtream":true,"\u212aey":1,"max_output_tokenſ":5}`,
		`{"model":"m","input":"hi","stream":true,"Stream":null}`,
		`{"model":"m","input":"hi","stream":true,"Stream":false}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x"}},"Text":{"format":{"schema":{}}}}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_object"}},"Text":null}`,
		`{"model":"m","input":"hi","metadata":{"a":"1"},"Metadata":{"b":"2"}}`,
		`{"model":"m","input":"hi","metadata":{"a":"1"},"Metadata":null}`,
		`{"model":"m","input":"hi","metadata":{"a":"1","a":"2","b":null}}`,
		`{"model":"m","input":"hi","include":["a","b"],"Include":[null]}`,
		`{"model":"m","input":"hi","include":["a"],"Include":null}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"f"}],"Tools":[{"type":"function","name":"g"}]}`,
		`{"model":"m","input":[{"role":"user","content":"a"}],"Input":"b"}`,
		`{"model":"m","input":"hi","reasoning":{"effort":"low"},"Reasoning":{"summary":"auto"}}`,
		`{"model":"m","input":[{"type":"message","type":"function_call","role":"user","content":"x","call_id":"c","name":"f","arguments":"{}"}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a","text":"b","Text":"c"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":"x","role":"robot"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","arguments":null}]}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"a"},{"type":"custom","name":"b"},{"type":"mcp"}]}}`,
		`{"model":"m","input":"hi","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"a"},{"type":"web_search"},{"type":"custom","name":"c"}]}]}`,

		// null for each kind of field.
		`{"model":"m","input":null,"previous_response_id":"resp_1"}`,
		`{"model":"m","input":"hi","instructions":null,"tools":null,"tool_choice":null,"parallel_tool_calls":null,"max_output_tokens":null,"temperature":null,` +
			`"top_p":null,"text":null,"reasoning":null,"metadata":null,"user":null,"store":null,"stream":null,"include":null,"truncation":null,"background":null,"top_logprobs":null}`,
		`{"model":null,"input":"hi"}`,
		`{"model":"","input":"hi"}`,
		`{"model":"m","input":"hi","text":{"format":{"type":null,"name":null}}}`,
		`{"model":"m","input":[null]}`,
		`{"model":"m","input":[{"type":null,"role":"user","content":"a"}]}`,
		`{"model":"m","input":[{"role":"user","content":null}]}`,
		`{"model":"m","input":[{"role":"user","content":[null]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":null}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":null}]}`,
		`{"model":"m","input":[{"type":"custom_tool_call","call_id":"c","name":"f"}]}`,
		`{"model":"m","input":[{"type":"custom_tool_call","call_id":"c","name":"f","input":""}]}`,
		`{"model":"m","input":"hi","tools":[null]}`,
		`{"model":"m","input":"hi","tools":[{"type":"namespace","name":"n","tools":[null]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"namespace","tools":[]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"custom","name":"c","format":null}]}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"required","tools":null}}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"function"}}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools"}}`,
		`{"model":"m","input":"hi","tool_choice":{}}`,

		// A value of the wrong type at each level.
		`[1,2]`,
		`"model"`,
		`null`,
		`{"model":1,"input":"hi"}`,
		`{"model":"m","input":5}`,
		`{"model":"m","input":{"role":"user"}}`,
		`{"model":"m","input":true}`,
		`{"model":"m","input":"hi","instructions":7}`,
		`{"model":"m","input":"hi","tools":{}}`,
		`{"model":"m","input":"hi","tools":["f"]}`,
		`{"model":"m","input":"hi","tools":[{"type":5}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":["f"]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","tools":3}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","description":3}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","strict":"no","description":3}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"custom","name":"f","format":"lark"}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"custom","name":"f","format":{"type":"grammar","syntax":1}}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"namespace","name":"n","tools":[{"type":1}]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f","strict":1}]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"namespace","name":"n","tools":"x"}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"web_search","name":3}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function"}],"tool_choice":"bad"}`,
		`{"model":"m","input":"hi","tool_choice":5}`,
		`{"model":"m","input":"hi","tool_choice":[]}`,
		`{"model":"m","input":"hi","tool_choice":true}`,
		`{"model":"m","input":"hi","tool_choice":{"type":1}}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":1}]}}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[3]}}`,
		`{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"sometimes"}}`,
		`{"model":"m","input":"hi","parallel_tool_calls":"yes"}`,
		`{"model":"m","input":"hi","max_output_tokens":1.5}`,
		`{"model":"m","input":"hi","max_output_tokens":-3}`,
		`{"model":"m","input":"hi","max_output_tokens":1e3}`,
		`{"model":"m","input":"hi","max_output_tokens":"100"}`,
		`{"model":"m","input":"hi","max_output_tokens":99999999999999999999}`,
		`{"model":"m","input":"hi","max_output_tokens":2147483649}`,
		`{"model":"m","input":"hi","temperature":1e999}`,
		`{"model":"m","input":"hi","temperature":-0,"top_p":1e-400}`,
		`{"model":"m","input":"hi","temperature":true}`,
		`{"model":"m","input":"hi","top_p":[0.5]}`,
		`{"model":"m","input":"hi","text":"json"}`,
		`{"model":"m","input":"hi","text":{"format":"json"}}`,
		`{"model":"m","input":"hi","text":{"verbosity":1}}`,
		`{"model":"m","input":"hi","text":{"format":{"type":["json_object"]}}}`,
		`{"model":"m","input":"hi","reasoning":"high"}`,
		`{"model":"m","input":"hi","reasoning":{"effort":1}}`,
		`{"model":"m","input":"hi","metadata":[]}`,
		`{"model":"m","input":"hi","metadata":{"k":1}}`,
		`{"model":"m","input":"hi","metadata":{"k":{"a":1}}}`,
		`{"model":"m","input":"hi","metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`,
		`{"model":"m","input":"hi","metadata":{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":"","q":""}}`,
		`{"model":"m","input":"hi","user":1}`,
		`{"model":"m","input":"hi","store":"false"}`,
		`{"model":"m","input":"hi","stream":1}`,
		`{"model":"m","input":"hi","include":"reasoning.encrypted_content"}`,
		`{"model":"m","input":"hi","include":[1]}`,
		`{"model":"m","input":"hi","truncation":false}`,
		`{"model":"m","input":"hi","background":"no"}`,
		`{"model":"m","input":"hi","top_logprobs":2.5}`,
		`{"model":"m","input":"hi","previous_response_id":1}`,
		`{"model":"m","temperature":"x","top_p":"y","input":"hi"}`,
		`{"model":5,"temperature":"x","input":"hi"}`,
		`{"model":"m","input":[1]}`,
		`{"model":"m","input":["hi"]}`,
		`{"model":"m","input":[[]]}`,
		`{"model":"m","input":[{"type":1}]}`,
		`{"model":"m","input":[{"role":"user","content":"a","id":5}]}`,
		`{"model":"m","input":[{"role":"user","content":5}]}`,
		`{"model":"m","input":[{"role":"user","content":{"type":"input_text"}}]}`,
		`{"model":"m","input":[{"role":"user","content":[5]}]}`,
		`{"model":"m","input":[{"role":"user","content":["a"]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":1}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"bogus"},{"type":"input_text","text":1}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":1}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AA","detail":"low"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_data":"data:application/pdf;base64,AA","filename":"a.pdf"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1","file_data":"x"}]}]}`,
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"},{"type":"output_text","text":"t"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x"},{"type":"input_text","text":"t"}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"t"},{"type":"refusal"}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":5}]}`,
		`{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`,
		`{"model":"m","input":[{"type":"custom_tool_call_output","call_id":"c","output":"x"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`,
		`{"model":"m","input":[{"type":"item_reference"}]}`,
		`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`,
		`{"model":"m","input":[{"id":"msg_1","content":null}]}`,
		`{"model":"m","input":[{"id":"msg_1","content":"x"}]}`,
		`{"model":"m","input":[{"role":"developer","content":"x"},{"role":"system","content":[]}]}`,
		`{"model":"m","input":[]}`,
		`{"model":"m","input":[],"previous_response_id":""}`,
		`{"model":"m","input":""}`,
		`{"model":"m","input":[{"type":"reasoning","summary":5}]}`,
		`{"model":"m","input":[{"type":"web_search_call","id":"ws_1","status":"completed"}],"background":true}`,

		// Strings, numbers and whitespace.
		` { "model" : "m" , "input" : [ { "role" : "user" , "content" : [ { "type" : "input_text" , "text" : "spaced" } ] } ] , "tools" : [ { "type" : "function" , "name" : "f" , "parameters" : { "a" : 1 } } ] } `,
		`{"model":"m\u00e9\ud83d\ude00","input":"\"quoted\"\n\t\\ \u0000 \ud800 \udc00x \u2028"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"\ud83d"}]}],"instructions":"\/\b\f\r"}`,
		`{"model":"m","input":"hi","temperature":-0.0e+0,"top_p":123456789012345678901234567890,"max_output_tokens":1}`,
		`{"model":"m","input":"hi","top_logprobs":-1,"max_output_tokens":2147483648}`,
		`{"model":"m","input":"hi","metadata":{"é":"` + strings.Repeat("é", 512) + `"}}`,
		`{"model":"m","input":"hi","metadata":{"é":"` + strings.Repeat("é", 513) + `"}}`,
		`{"model":"m","input":"hi","truncation":"` + strings.Repeat("x", 120) + `"}`,
	}
}

// TestDecodeGolden: what Decode reads from each body of decode.golden,
// or its refusal, is the file's.
func TestDecodeGolden(t *testing.T) {
	var b strings.Builder
	for i, body := range decodeInputs() {
		fmt.Fprintf(&b, "# %d\nbody: %q\n%s\n", i, body, render(Decode([]byte(body))))
	}
	goldentest.Check(t, "decode.golden", b.String())
}

// render prints a decode's result deterministically: the refusal, or
// every field of Decoded (pointers followed, raw values quoted, maps in
// key order).
func render(d *Decoded, e *Error) string {
	if e != nil {
		return fmt.Sprintf("refused: %d %q %q %q", e.Status, e.Code, e.Param, e.Message)
	}
	return fmt.Sprintf("stream=%v store=%v\n%s", d.stream, d.store, dump(reflect.ValueOf(*d), ""))
}

func dump(v reflect.Value, indent string) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "nil"
		}
		return "&" + dump(v.Elem(), indent)
	case reflect.Slice:
		if v.IsNil() {
			return "nil"
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Sprintf("%q", v.Bytes())
		}
		if v.Len() == 0 {
			return "[]"
		}
		var b strings.Builder
		b.WriteString("[\n")
		for i := range v.Len() {
			fmt.Fprintf(&b, "%s  %s\n", indent, dump(v.Index(i), indent+"  "))
		}
		return b.String() + indent + "]"
	case reflect.Map:
		if v.IsNil() {
			return "nil"
		}
		var keys []string
		for _, k := range v.MapKeys() {
			keys = append(keys, fmt.Sprintf("%q:%s", k.Interface(), dump(v.MapIndex(k), indent)))
		}
		slices.Sort(keys)
		return "{" + strings.Join(keys, " ") + "}"
	case reflect.Struct:
		var b strings.Builder
		b.WriteString("{\n")
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || v.Field(i).IsZero() {
				continue
			}
			fmt.Fprintf(&b, "%s  %s: %s\n", indent, f.Name, dump(v.Field(i), indent+"  "))
		}
		return b.String() + indent + "}"
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	}
	return fmt.Sprintf("%v", v.Interface())
}
