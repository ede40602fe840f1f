package openaiwire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeAsUnmarshal: Decode's request and error are json.Unmarshal's.
func TestDecodeAsUnmarshal(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stop":["x"]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
		`{"messages":[{"role":"user","content":5}]}`,
		`{"messages":"no"}`,
		`{"max_tokens":"5"}`,
		`{"messages":[`,
		``,
		`null`,
	} {
		var want, got ChatRequest
		werr := json.Unmarshal([]byte(body), &want)
		gerr := Decode([]byte(body), &got)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, json.Unmarshal's %v", body, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, json.Unmarshal's %+v", body, got, want)
		}
	}
}
