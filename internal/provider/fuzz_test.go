package provider

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fuzzNow maps a fuzzed number of seconds to a time between 1970 and
// about 2106, so that HTTP-dates near it are easy to reach.
func fuzzNow(sec uint32) time.Time { return time.Unix(int64(sec), 0).UTC() }

// FuzzRetryAfter feeds arbitrary retry-after-ms and Retry-After values to
// RetryAfter. It must not panic, and the wait is never negative and never
// more than maxRetryAfter (24h), whatever the header says.
func FuzzRetryAfter(f *testing.F) {
	const now = 1792567680 // 2026-10-21 07:28:00 UTC
	for _, seed := range []struct{ ms, ra string }{
		{"", ""},
		{"", "2"},
		{"", "1.5"},
		{"1500", "30"},
		{"soon", "3"},
		{"", "Wed, 21 Oct 2026 07:28:09 GMT"},
		{"", "Wed, 21 Oct 2026 07:27:00 GMT"},
		{"", "-5"},
		{"", "NaN"},
		{"", "1e30"},
		{"-Inf", "+Inf"},
		{"0x1p-2", "86400"},
		{"", "Monday, 02-Jan-06 15:04:05 MST"},
		{"", "Mon Jan  2 15:04:05 2006"},
	} {
		f.Add(seed.ms, seed.ra, uint32(now))
	}
	f.Fuzz(func(t *testing.T, ms, ra string, sec uint32) {
		h := http.Header{}
		if ms != "" {
			h["Retry-After-Ms"] = []string{ms}
		}
		if ra != "" {
			h["Retry-After"] = []string{ra}
		}
		got := RetryAfter(h, fuzzNow(sec))
		if got < 0 || got > maxRetryAfter {
			t.Fatalf("RetryAfter(retry-after-ms %q, Retry-After %q) = %v, want within [0, %v]", ms, ra, got, maxRetryAfter)
		}
	})
}

// FuzzParseCount feeds arbitrary header values to ParseCount. It must not
// panic; the count is -1 (unknown) or a non-negative number, never 0 when
// zeroUnknown, and -1 for every value the doc calls unknown: absent,
// malformed (not a number) or negative.
func FuzzParseCount(f *testing.F) {
	for _, seed := range []struct {
		v           string
		zeroUnknown bool
	}{
		{"", false}, {"59", false}, {"0", false}, {"0", true}, {"-1", false}, {"-1", true},
		{"abc", false}, {" 12 ", false}, {"12.0", false}, {"1e3", true}, {"NaN", false},
		{"9223372036854775807", false}, {"9223372036854775808", false}, {"1e19", false},
		{"30000", true}, {"29000", false}, {"+5", false}, {"0x10", false}, {"0.5", false}, {"-1.5", true},
	} {
		f.Add(seed.v, seed.zeroUnknown)
	}
	f.Fuzz(func(t *testing.T, v string, zeroUnknown bool) {
		h := http.Header{}
		if v != "" {
			h["X-Ratelimit-Remaining-Requests"] = []string{v}
		}
		got := ParseCount(h, "X-Ratelimit-Remaining-Requests", zeroUnknown)
		if got < -1 {
			t.Fatalf("ParseCount(%q, %v) = %d, want -1 or a count >= 0", v, zeroUnknown, got)
		}
		if zeroUnknown && got == 0 {
			t.Fatalf("ParseCount(%q, zeroUnknown) = 0, want -1: a zero limit means not reported", v)
		}
		tv := strings.TrimSpace(v)
		if tv == "" && got != -1 {
			t.Fatalf("ParseCount(%q, %v) = %d for a blank value, want -1", v, zeroUnknown, got)
		}
		fv, err := strconv.ParseFloat(tv, 64)
		if err != nil && got != -1 {
			if _, ierr := strconv.ParseInt(tv, 10, 64); ierr != nil {
				t.Fatalf("ParseCount(%q, %v) = %d for a value that is not a number, want -1", v, zeroUnknown, got)
			}
		}
		if err == nil && fv < 0 && got != -1 {
			t.Fatalf("ParseCount(%q, %v) = %d for a negative value, want -1", v, zeroUnknown, got)
		}
	})
}
