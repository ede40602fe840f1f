package recent

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestAppendJSON: a record's AppendJSON is byte for byte what
// encoding/json makes of the record Since returns, hostile texts
// included (quotes, controls, <img>, U+2028, invalid UTF-8).
func TestAppendJSON(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 123456789, time.UTC)
	for _, c := range []struct {
		name string
		q    Request
		set  func(*Request)
	}{
		{"served", Request{ID: "req_1", API: "chat", Model: "m", Key: "team-a", Status: 200, Provider: "p", Target: "gpt-4o", Tier: 1,
			TTFT: 1500, Total: 2_000_000, CostUSD: 0.0012, Degraded: true, Hedged: true, Affinity: "kept", At: at},
			func(q *Request) {
				q.AddAttempt("a", "server_error")
				q.AddAttempt("p", "ok")
				q.SetAsked("m")
				q.SetError("boom")
			}},
		{"empty", Request{}, func(*Request) {}},
		{"hostile texts", Request{ID: "a\"b\\c\n\r\t\x01", At: at.In(time.FixedZone("x", 3600)), CostUSD: 1e-7, Status: 404},
			func(q *Request) {
				q.SetAsked(`<img src=x onerror="window.__pwned=1">&` + "\u2028\u2029")
				q.SetError("bad \xff\xfe utf-8 é 🙂 \x7f")
			}},
		{"many attempts, big and negative numbers", Request{CostUSD: 2.5e21, Tier: -1, Total: math.MaxInt64}, func(q *Request) {
			for range 6 {
				q.AddAttempt("p", "timeout")
			}
		}},
		{"cost in e notation below 1e-6", Request{CostUSD: 3e-9}, func(*Request) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(2)
			q := c.q
			c.set(&q)
			r.Add(&q)
			recs, _ := r.Since(0, 0, nil)
			want, err := marshal(recs[0])
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := r.Copy(0, 0, nil)
			got := raw[0].AppendJSON(nil)
			if string(got) != string(want) {
				t.Errorf("AppendJSON\n got %s\nwant %s", got, want)
			}
		})
	}
}

// FuzzAppendJSON: whatever a client names as its model and a provider
// says in its error, AppendJSON is valid JSON that decodes to the texts
// encoding/json keeps.
func FuzzAppendJSON(f *testing.F) {
	f.Add("m", "boom", 0.5)
	f.Add("<img src=x onerror=alert(1)>", "\xff\u2028\"\\", 1e-9)
	f.Fuzz(func(t *testing.T, asked, msg string, cost float64) {
		if math.IsNaN(cost) || math.IsInf(cost, 0) {
			return
		}
		var q Request
		q.SetAsked(asked)
		q.SetError(msg)
		q.CostUSD = cost
		r := New(1)
		r.Add(&q)
		recs, _ := r.Since(0, 0, nil)
		want, _ := marshal(recs[0])
		raw, _ := r.Copy(0, 0, nil)
		if got := raw[0].AppendJSON(nil); string(got) != string(want) {
			t.Errorf("AppendJSON\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkAppendJSON: a batch of 100 records as the event stream sends
// it (copied out, encoded), against encoding/json on Since's records.
func BenchmarkAppendJSON(b *testing.B) {
	r := New(512)
	for range 100 {
		q := Request{ID: "req_abcdef123456", API: "chat", Model: "m", Key: "team-a", Status: 200, Provider: "p", Target: "gpt-4o-mini",
			At: time.Now(), Total: 1234567, CostUSD: 0.0012}
		q.AddAttempt("p", "ok")
		q.SetAsked("m")
		r.Add(&q)
	}
	b.Run("append", func(b *testing.B) {
		var recs []Request
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			recs, _ = r.Copy(0, 100, recs[:0])
			buf = append(buf[:0], '[')
			for i := range recs {
				buf = recs[i].AppendJSON(buf)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var recs []Request
		b.ReportAllocs()
		for b.Loop() {
			recs, _ = r.Since(0, 100, recs[:0])
			_, _ = json.Marshal(recs)
		}
	})
}

// marshal is encoding/json's encoding of v without HTML escaping, as the
// router writes JSON (openaiwire.AppendString).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
