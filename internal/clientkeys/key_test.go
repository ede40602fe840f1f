package clientkeys

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestAllowList(t *testing.T) {
	tests := []struct {
		models []string
		model  string
		want   bool
	}{
		{nil, "anything", true},
		{[]string{"gpt-4o-mini"}, "gpt-4o-mini", true},
		{[]string{"gpt-4o-mini"}, "gpt-4o", false},
		{[]string{"gpt-4o-mini", "claude-*"}, "claude-opus-4-1", true},
		{[]string{"claude-*"}, "claude-", true},
		{[]string{"claude-*"}, "claud", false},
		{[]string{"*"}, "x", true},
	}
	for _, tt := range tests {
		if got := newAllowList(tt.models).allows(tt.model); got != tt.want {
			t.Errorf("models %q, %q: got %v, want %v", tt.models, tt.model, got, tt.want)
		}
	}
}

func TestKeyLimits(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := NewSet(reg, nil, nil)
	ks := s.Update([]Spec{{Name: "a", Limits: Limits{Models: []string{"m"}, RPM: 2, TPM: 1000}}})
	k := ks.Lookup("a")
	t0 := time.Now()
	if k.Allows("other") || !k.Allows("m") {
		t.Error("allow-list not applied")
	}
	var tickets []Ticket
	for i := range 2 {
		tk, r := k.Admit(context.Background(), clock(t0), 10, 0)
		if r != nil {
			t.Fatalf("request %d refused: %+v", i, r)
		}
		tickets = append(tickets, tk)
	}
	if _, r := k.Admit(context.Background(), clock(t0), 10, 0); r == nil || r.Reason != Rate || r.Wait <= 0 || r.Wait > 30*time.Second {
		t.Errorf("third request in the minute: got %+v, want a rate refusal with a wait of about 30s", r)
	}
	// A reload that keeps the key's rpm/tpm keeps its minute.
	k2 := s.Update([]Spec{{Name: "a", Limits: Limits{RPM: 2, TPM: 1000}}}).Lookup("a")
	if _, r := k2.Admit(context.Background(), clock(t0.Add(time.Second)), 10, 0); r == nil {
		t.Error("after a reload keeping rpm: admitted a third request in the minute")
	}
	if _, r := k.Admit(context.Background(), clock(t0.Add(31*time.Second)), 2000, 0); r == nil || r.Reason != TooLarge {
		t.Errorf("over the whole TPM: got %+v, want TooLarge", r)
	}
	for _, tk := range tickets {
		k.Settle(t0, tk, 5, 0.25)
	}
	if got := testutil.ToFloat64(s.m.rejections.WithLabelValues("a", "rate")); got != 3 {
		t.Errorf("rate rejections: got %g, want 3", got)
	}
	if got := testutil.ToFloat64(s.m.rejections.WithLabelValues("a", "model")); got != 1 {
		t.Errorf("model rejections: got %g, want 1", got)
	}
	if got := testutil.ToFloat64(s.m.spend.WithLabelValues("a")); got != 0.5 {
		t.Errorf("spend: got %g, want 0.5", got)
	}
	if ks := s.Update(nil); ks.Lookup("a") != nil || ks.Lookup("") == nil {
		t.Error("after removing the key: still there, or no anonymous key")
	}
	if n := testutil.CollectAndCount(s.m.rejections); n != 0 {
		t.Errorf("series of a removed key: %d left, want 0", n)
	}
}

// clock is a clock stopped at t.
func clock(t time.Time) func() time.Time { return func() time.Time { return t } }
