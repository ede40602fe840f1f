package redistest

import "testing"

func TestStartStop(t *testing.T) {
	s := Start(t)
	if got := s.Do("SET", "k", "v"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
	s.Stop()
	if s.ping() {
		t.Fatal("server still answers after Stop")
	}
	s.Start()
	if got := s.Do("GET", "k"); got != "$-1" {
		t.Fatalf("GET after restart = %q, want nil (no persistence)", got)
	}
}
