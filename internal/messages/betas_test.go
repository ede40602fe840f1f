package messages

import (
	"strings"
	"testing"
)

func TestCheckBetas(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want string // "" accepted, else the refusal's message starts so
	}{
		{"", ""},
		{"claude-code-20250219", ""},
		{"claude-code-20250219,interleaved-thinking-2025-05-14", ""},
		{" claude-code-20250219 ,\tfine-grained-tool-streaming-2025-05-14\t", ""},
		{",,  ,\t,", ""}, // empty elements are ignored
		{"credit balance", "anthropic-beta: value 1 "},
		{"claude-code-20250219,credit balance", "anthropic-beta: value 2 "},
		{"Claude-Code", "anthropic-beta: value 1 "},
		{"a_b", "anthropic-beta: value 1 "},
		{"a,b.c", "anthropic-beta: value 2 "},
		{"a,b\x00", "anthropic-beta: value 2 "},
		{"a, b c", "anthropic-beta: value 2 "},
		{"é", "anthropic-beta: value 1 "},
		{"a,`x`", "anthropic-beta: value 2 "},
	} {
		e := CheckBetas(tt.v)
		switch {
		case tt.want == "" && e != nil:
			t.Errorf("CheckBetas(%q) = %q, want accepted", tt.v, e.Message)
		case tt.want != "" && (e == nil || e.Status != 400 || e.Type != "invalid_request_error" || !strings.HasPrefix(e.Message, tt.want)):
			t.Errorf("CheckBetas(%q) = %+v, want a 400 invalid_request_error starting %q", tt.v, e, tt.want)
		case e != nil && strings.Contains(e.Message, tt.v):
			t.Errorf("CheckBetas(%q) = %q quotes the value", tt.v, e.Message)
		}
	}
}
