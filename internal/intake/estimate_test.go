package intake

import "testing"

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name      string
		bodyLen   int
		maxTokens int64
		want      int64
	}{
		{"empty body, default completion", 0, 0, DefaultMaxTokens},
		{"negative max_tokens takes the default", 0, -5, DefaultMaxTokens},
		{"four bytes a token", 400, 50, 100 + 50},
		{"rounded up", 401, 50, 101 + 50},
		{"one byte", 1, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateTokens(make([]byte, tt.bodyLen), tt.maxTokens); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
