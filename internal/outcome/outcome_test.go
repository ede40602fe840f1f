package outcome

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestKindNumbersAreStable pins each kind's number and name: they are
// metric label values and are written to the state file, so a new kind is
// appended and never renumbers the others.
func TestKindNumbersAreStable(t *testing.T) {
	want := []struct {
		k    Kind
		n    uint8
		name string
	}{
		{OK, 0, "ok"}, {RateLimited, 1, "rate_limited"}, {Overloaded, 2, "overloaded"},
		{ServerError, 3, "server_error"}, {Timeout, 4, "timeout"}, {Network, 5, "network"},
		{Auth, 6, "auth"}, {Quota, 7, "quota"}, {ClientError, 8, "client_error"},
		{Canceled, 9, "canceled"}, {Unknown, 10, "unknown"}, {TargetMissing, 11, "target_missing"},
		{ContextExceeded, 12, "context_exceeded"},
	}
	ks := Kinds()
	if len(ks) != len(want) {
		t.Fatalf("Kinds() has %d kinds, want %d", len(ks), len(want))
	}
	for i, w := range want {
		if uint8(w.k) != w.n || ks[i] != w.k || w.k.String() != w.name {
			t.Errorf("kind %d: got number %d, Kinds()[%d] = %v, name %q; want %d, %v, %q",
				i, uint8(w.k), i, ks[i], w.k.String(), w.n, w.k, w.name)
		}
	}
	if got := Kind(200).String(); got != "kind(200)" {
		t.Errorf("Kind(200).String() = %q, want kind(200)", got)
	}
}

func TestRetryableAndCounts(t *testing.T) {
	tests := []struct {
		k                 Kind
		retryable, counts bool
	}{
		{OK, false, true},
		{RateLimited, true, true},
		{Overloaded, true, true},
		{ServerError, true, true},
		{Timeout, true, true},
		{Network, true, true},
		{Auth, false, true},
		{Quota, false, true},
		{ClientError, false, false},
		{Canceled, false, false},
		{Unknown, true, true},
		{TargetMissing, false, false},
		{ContextExceeded, false, false},
	}
	if len(tests) != len(Kinds()) {
		t.Fatalf("the table covers %d kinds, want all %d", len(tests), len(Kinds()))
	}
	for _, tt := range tests {
		if got := tt.k.Retryable(); got != tt.retryable {
			t.Errorf("%v.Retryable() = %v, want %v", tt.k, got, tt.retryable)
		}
		if got := tt.k.Counts(); got != tt.counts {
			t.Errorf("%v.Counts() = %v, want %v", tt.k, got, tt.counts)
		}
	}
}

func TestForStatus(t *testing.T) {
	tests := []struct {
		status int
		want   Kind
	}{
		{0, OK}, {200, OK}, {204, OK}, {302, OK},
		{400, ClientError}, {401, Auth}, {402, Quota}, {403, Auth}, {404, ClientError},
		{408, Timeout}, {409, Overloaded}, {413, ClientError}, {422, ClientError}, {429, RateLimited},
		{499, ClientError},
		{500, ServerError}, {501, ServerError}, {502, ServerError}, {503, Overloaded},
		{504, ServerError}, // the provider's gateway timed out, not our timer
		{529, Overloaded}, {599, ServerError},
	}
	for _, tt := range tests {
		if got := ForStatus(tt.status); got != tt.want {
			t.Errorf("ForStatus(%d) = %v, want %v", tt.status, got, tt.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	tm := &Error{Kind: TargetMissing, Status: 404, Message: "model: claude-x"}
	tests := []struct {
		err  error
		want Kind
	}{
		{nil, OK},
		{tm, TargetMissing},
		{fmt.Errorf("calling: %w", tm), TargetMissing},
		{context.Canceled, Canceled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), Timeout},
		{errors.New("boom"), Unknown},
	}
	for _, tt := range tests {
		if got := KindOf(tt.err); got != tt.want {
			t.Errorf("KindOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Kind: TargetMissing, Status: 404, Message: "The model `x` does not exist."}
	if got, want := e.Error(), "target_missing (status 404): The model `x` does not exist."; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	cause := errors.New("dial tcp: refused")
	e = &Error{Kind: Network, Err: cause}
	if got, want := e.Error(), "network: dial tcp: refused"; got != want || !errors.Is(e, cause) {
		t.Errorf("Error() = %q (unwraps to cause: %v), want %q", got, errors.Is(e, cause), want)
	}
}
