package hedge

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want string // "" valid, else a substring of the error
	}{
		{"off", Config{}.WithDefaults(), ""},
		{"no share", Config{After: time.Second}, "routing.hedge.max_share"},
		{"default", DefaultConfig(), ""},
		{"on", Config{After: 300 * time.Millisecond, MaxShare: 0.2}, ""},
		{"every request", Config{After: time.Second, MaxShare: 1}, ""},
		{"negative after", Config{After: -time.Second}, "routing.hedge.after"},
		{"share above 1", Config{MaxShare: 1.5}, "routing.hedge.max_share"},
		{"negative share", Config{MaxShare: -0.1}, "routing.hedge.max_share"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

// TestShare is the cap's step table: requests and hedges in order, and
// whether each hedge is allowed.
func TestShare(t *testing.T) {
	type step struct {
		requests int  // counted first
		take     bool // then, when true, a hedge is asked for
		want     bool
	}
	tests := []struct {
		name  string
		max   float64
		steps []step
	}{
		{"none before max share of the decayed count makes room", 0.2, []step{{requests: 1, take: true, want: false}, {requests: 4, take: true, want: false}, {requests: 1, take: true, want: true}}},
		{"about one in five", 0.2, []step{{requests: 6, take: true, want: true}, {requests: 1, take: true, want: false}, {requests: 5, take: true, want: true}}},
		{"every request", 1, []step{{requests: 1, take: true, want: true}, {requests: 1, take: true, want: true}, {take: true, want: false}}},
		{"a burst is bounded by the share of the window", 0.05, []step{{requests: 1000}, {take: true, want: true}, {take: true, want: true}, {requests: 0, take: true, want: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Share
			for i, st := range tt.steps {
				for range st.requests {
					s.Request()
				}
				if !st.take {
					continue
				}
				if got := s.Take(tt.max); got != st.want {
					t.Fatalf("step %d: Take(%g) = %v, want %v (total %.2f, hedged %.2f)", i, tt.max, got, st.want, s.total, s.hedged)
				}
			}
		})
	}
}

// TestShareLongRun: over many requests each asking for a hedge, the
// share that hedges stays at max share; returned hedges make room again.
func TestShareLongRun(t *testing.T) {
	for _, max := range []float64{0.05, 0.2, 0.5} {
		var s Share
		n, taken := 10000, 0
		for range n {
			s.Request()
			if s.Take(max) {
				taken++
			}
		}
		if got := float64(taken) / float64(n); got > max+0.005 || got < max-0.01 {
			t.Errorf("max %g: %d of %d hedged (%.3f), want about %g", max, taken, n, got, max)
		}
		for s.Take(max) {
		}
		s.Return()
		if !s.Take(max) {
			t.Errorf("max %g: a returned hedge does not make room", max)
		}
	}
}
