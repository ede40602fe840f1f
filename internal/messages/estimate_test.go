package messages

import (
	"strings"
	"testing"
)

// TestEstimateInputTokens: bytes/4 over what the model reads, images at
// imageTokens, thinking not counted, at least 1.
func TestEstimateInputTokens(t *testing.T) {
	s40 := strings.Repeat("a", 40) // 10 tokens
	tests := []struct {
		name, body string
		want       int64
	}{
		{"empty text is still 1", `{"model":"m","messages":[{"role":"user","content":""}]}`, 1},
		{"string content", `{"model":"m","messages":[{"role":"user","content":"` + s40 + `"}]}`, 10},
		{"rounded up", `{"model":"m","messages":[{"role":"user","content":"abcde"}]}`, 2},
		{"string system and text blocks", `{"model":"m","system":"` + s40 + `","messages":[{"role":"user","content":[{"type":"text","text":"` + s40 + `"},{"type":"text","text":"` + s40 + `"}]}]}`, 30},
		{"system blocks", `{"model":"m","system":[{"type":"text","text":"` + s40 + `"}],"messages":[{"role":"user","content":"` + s40 + `"}]}`, 20},
		{"tool_use: name and input as written", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"abcd","input":{"k":"` + strings.Repeat("v", 30) + `"}}]}]}`,
			(4 + int64(len(`{"k":"`+strings.Repeat("v", 30)+`"}`)) + 3) / 4},
		{"tool_result string and blocks", `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"` + s40 + `"},
			{"type":"tool_result","tool_use_id":"y","content":[{"type":"text","text":"` + s40 + `"},{"type":"image","source":{"type":"url","url":"https://x"}}]}]}]}`, 20 + imageTokens},
		{"images at a flat cost, whatever their data", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("A", 4000) + `"}}]}]}`, imageTokens},
		{"thinking is not counted", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"` + s40 + `","signature":"` + s40 + `"},{"type":"text","text":"` + s40 + `"}]}]}`, 10},
		{"text documents and unknown blocks with text", `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","data":"` + s40 + `"}},{"type":"newer","text":"` + s40 + `"}]}]}`, 20},
		{"tools whole", `{"model":"m","tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":""}]}`, int64(len(`{"name":"f","input_schema":{}}`)+3) / 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, e := DecodeCount([]byte(tt.body)); e != nil {
				t.Fatalf("test body refused: %v", e)
			}
			if got := EstimateInputTokens([]byte(tt.body)); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
