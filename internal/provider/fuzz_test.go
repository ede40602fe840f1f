package provider

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
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

// FuzzAppendBodyCapped feeds arbitrary checked bodies, ops and caps to
// AppendBody (docs/ARCHITECTURE.md, "Output limits"). The output is valid
// JSON with the body's top-level keys in their order; the model is the
// target's; each of the op's limit fields holding a number above a cap
// is the cap; every other value is the body's, byte for byte.
func FuzzAppendBodyCapped(f *testing.F) {
	for _, seed := range []struct {
		body  string
		op    uint8
		limit int64
	}{
		{`{"model":"m","max_tokens":64000,"messages":[]}`, uint8(OpChat), 16384},
		{`{"max_completion_tokens":2e5, "model" : "m","max_tokens":null}`, uint8(OpChat), 100},
		{`{"model":"m","max_output_tokens":500,"input":"hi"}`, uint8(OpResponses), 100},
		{`{"model":"m","max\u005ftokens":20,"x":{"max_tokens":30}}`, uint8(OpMessages), 10},
		{`{"model":"m","max_tokens":-1.5e3}`, uint8(OpCompletions), 1},
		{`{"model":"m","max_tokens":5}`, uint8(OpEmbeddings), 1},
		{`{}`, uint8(OpChat), 0},
	} {
		f.Add(seed.body, seed.op, seed.limit)
	}
	f.Fuzz(func(t *testing.T, body string, op uint8, limit int64) {
		if jsoncheck.Check([]byte(body)) != nil || !gjson.Parse(body).IsObject() {
			return // the router sends only checked objects
		}
		r := &Request{Op: Op(op % 5), Model: "target", Body: []byte(body), MaxOutputTokens: limit}
		model := gjson.Get(body, "model")
		if model.Type == gjson.String {
			r.ModelStart, r.ModelEnd = model.Index, model.Index+len(model.Raw)
		}
		out := r.AppendBody(nil)
		if !json.Valid(out) {
			t.Fatalf("AppendBody(%s, cap %d) = %s, not JSON", body, limit, out)
		}
		type member struct{ key, raw string }
		members := func(doc string) []member {
			var m []member
			gjson.Parse(doc).ForEach(func(k, v gjson.Result) bool {
				m = append(m, member{k.Raw, v.Raw})
				return true
			})
			return m
		}
		in, got := members(body), members(string(out))
		if len(in) != len(got) {
			t.Fatalf("AppendBody(%s, cap %d) = %s: %d members, want %d", body, limit, out, len(got), len(in))
		}
		doc := gjson.Parse(body)
		for i, m := range in {
			want := m.raw
			var name string
			_ = json.Unmarshal([]byte(m.key), &name)
			v := doc.Get(gjson.Escape(name))
			switch {
			case name == "model" && r.ModelEnd > r.ModelStart:
				want = `"target"`
			case limit > 0 && slices.Contains(limitFields(r.Op), name) && v.Type == gjson.Number && v.Num > float64(limit):
				want = strconv.FormatInt(limit, 10)
			}
			if got[i].key != m.key || got[i].raw != want {
				t.Fatalf("AppendBody(%s, op %s, cap %d) = %s: member %d is %s:%s, want %s:%s", body, r.Op, limit, out, i, got[i].key, got[i].raw, m.key, want)
			}
		}
	})
}
