package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// fuzzMaxWait is the longest wait any header may impose, as
// provider.RetryAfter caps it: a broken or hostile value must not park a
// provider for years.
const fuzzMaxWait = 24 * time.Hour

// fuzzNow is the adapter clock in the fuzz targets.
var fuzzNow = time.Date(2026, 8, 21, 12, 40, 0, 0, time.UTC)

// FuzzClassifyError classifies arbitrary error bodies under statuses
// 400-599 with an arbitrary Retry-After. It must not panic and always
// returns a usable *outcome.Error (fuzzCheckError) with the HTTP status;
// and the body quoted in the step table's answers (echoes) where Anthropic
// quotes client input leaves each one's kind as it is with nothing there.
func FuzzClassifyError(f *testing.F) {
	for _, seed := range []struct {
		status int
		body   string
		ra     string
	}{
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`, ""},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, "12"},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"spend limit reached","details":{"error_code":"enforced_spend_limit_reached"}}}`, ""},
		{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, ""},
		{402, `{"type":"error","error":{"type":"billing_error","message":"pay up"}}`, ""},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`, ""},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, ""},
		{413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`, ""},
		{413, "<html><body><h1>413 Request Entity Too Large</h1></body></html>", ""},
		{404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`, ""},
		{500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, "Fri, 21 Aug 2026 12:41:00 GMT"},
		{409, `{"type":"error","error":{"type":"brand_new_error","message":"new"}}`, ""},
		{502, `{"error":{"message":"upstream connect error"}}`, ""},
		{503, "", "-1"},
		{599, strings.Repeat("é", 400) + "\xff", "1e30"},
	} {
		f.Add(seed.status, []byte(seed.body), seed.ra)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, ra string) {
		status = 400 + int(uint(status)%200)
		h := http.Header{}
		if ra != "" {
			h["Retry-After"] = []string{ra}
		}
		e := ClassifyError(status, h, body, fuzzNow)
		providertest.CheckClassified(t, "ClassifyError", e, fuzzMaxWait)
		if e.Status != status {
			t.Fatalf("Status %d, want %d", e.Status, status)
		}
		// The body, quoted where Anthropic quotes a client's input,
		// never changes a kind.
		providertest.FuzzEchoes(t, echoes, classifyAt, string(body))
	})
}

// FuzzParseRateLimit reads arbitrary anthropic-ratelimit-* values, on the
// combined tokens-* axis or the input-tokens-* one. It must not panic;
// counts are -1 (unknown) or more, a limit is never 0, and the resets and
// Retry-After are within [0, 24h].
func FuzzParseRateLimit(f *testing.F) {
	for _, s := range []struct {
		v     [7]string
		input bool
	}{
		{[7]string{"50", "49", "2026-08-21T12:40:01Z", "30000", "29000", "2026-08-21T12:40:02Z", ""}, false},
		{[7]string{"4000", "3999", "2026-08-21T12:40:00.5Z", "400000", "399000", "2026-08-21T12:40:30+00:00", ""}, true},
		{[7]string{"50", "0", "2026-08-21T12:40:30Z", "", "", "", "30"}, false},
		{[7]string{"0", "-1", "yesterday", "abc", "", "2026-08-21T12:39:00Z", "Fri, 21 Aug 2026 12:41:00 GMT"}, false},
		{[7]string{"", "", "", "", "", "", ""}, true},
		{[7]string{"1e3", "12.5", "2026-08-21T12:40:00Z", "-5", "0", "2026-08-22T12:40:00Z", "NaN"}, true},
	} {
		f.Add(s.v[0], s.v[1], s.v[2], s.v[3], s.v[4], s.v[5], s.v[6], s.input)
	}
	f.Fuzz(func(t *testing.T, reqLimit, reqRemaining, reqReset, tokLimit, tokRemaining, tokReset, retryAfter string, input bool) {
		const pre = "Anthropic-Ratelimit-"
		tok := pre + "Tokens-"
		if input {
			tok = pre + "Input-Tokens-"
		}
		h := http.Header{}
		for k, v := range map[string]string{
			pre + "Requests-Limit": reqLimit, pre + "Requests-Remaining": reqRemaining, pre + "Requests-Reset": reqReset,
			tok + "Limit": tokLimit, tok + "Remaining": tokRemaining, tok + "Reset": tokReset, "Retry-After": retryAfter,
		} {
			if v != "" {
				h[k] = []string{v}
			}
		}
		rl := ParseRateLimit(h, fuzzNow)
		for _, c := range []struct {
			name         string
			limit, count int64
		}{
			{"requests", rl.LimitRequests, rl.RemainingRequests},
			{"tokens", rl.LimitTokens, rl.RemainingTokens},
		} {
			if c.limit < -1 || c.limit == 0 || c.count < -1 {
				t.Fatalf("%s: limit %d remaining %d, want a limit of -1 or > 0 and a remaining >= -1 (%+v)", c.name, c.limit, c.count, rl)
			}
		}
		for _, d := range []time.Duration{rl.ResetRequests, rl.ResetTokens, rl.RetryAfter} {
			if d < 0 || d > fuzzMaxWait {
				t.Fatalf("wait %v out of [0, %v] (%+v)", d, fuzzMaxWait, rl)
			}
		}
	})
}

// FuzzStream runs the Messages stream translator, and the native Messages
// stream (fuzzNativeStream), over arbitrary SSE bytes, as if Anthropic had
// answered them with 200 text/event-stream. Next must not panic and must
// stop; every translated payload is a one-line JSON chat.completion.chunk;
// io.EOF comes only after a message_stop event, or at a clean end after a
// chunk with a finish reason (the stop reason came); any other end carries
// a usable *outcome.Error, and repeats.
func FuzzStream(f *testing.F) {
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	start := ev("message_start", `{"type":"message_start","message":{"id":"msg_01S","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5-20251001","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":1}}}`)
	text := ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		ev("ping", `{"type": "ping"}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo \"x\"\n"}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	tool := ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`) +
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Oslo\"}"}}`) +
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	end := ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`) +
		ev("message_stop", `{"type":"message_stop"}`)
	for _, seed := range []struct {
		in    string
		usage bool
	}{
		{start + text + tool + end, true},
		{start + text + end, false},
		{strings.ReplaceAll(start+text+end, "\n", "\r\n"), true},
		{start + ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`) + end, false},
		{start + ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), false},
		{start + "event: content_block_delta\ndata: {\"type\":", false},
		{start + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n", true},
		{start + text + strings.TrimSuffix(end, ev("message_stop", `{"type":"message_stop"}`)), true},
		{start + ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`) +
			"event: ping\n\n" + ev("brand_new_event", `{"type":"brand_new_event"}`) + end + ev("ping", `{"type":"ping"}`), false},
	} {
		f.Add([]byte(seed.in), seed.usage)
	}
	f.Fuzz(func(t *testing.T, in []byte, includeUsage bool) {
		fuzzNativeStream(t, in)
		s := newStream(context.Background(), io.NopCloser(bytes.NewReader(in)), "claude-haiku-4-5", fuzzNow.Unix(), includeUsage)
		var err error
		finished := false
		for calls := 0; ; calls++ {
			if calls > len(in)+2 {
				t.Fatalf("Next did not end after %d calls", calls)
			}
			_ = s.Pending()
			var p []byte
			if p, err = s.Next(); err != nil {
				if p != nil {
					t.Fatalf("Next returned payload %q with error %v", p, err)
				}
				break
			}
			providertest.CheckChunk(t, p)
			if fr := gjson.GetBytes(p, "choices.0.finish_reason"); fr.Type == gjson.String {
				finished = true
			}
		}
		if _, again := s.Next(); (again == io.EOF) != (err == io.EOF) || again == nil {
			t.Fatalf("Next after %v returned %v, want the same end", err, again)
		}
		for i := range 2 {
			if cerr := s.Close(); cerr != nil {
				t.Fatalf("Close #%d: %v", i+1, cerr)
			}
		}
		if err == io.EOF {
			if !finished && !bytes.Contains(in, []byte("message_stop")) {
				t.Fatal("io.EOF from a stream without message_stop or a finish reason")
			}
			return
		}
		providertest.CheckEnd(t, "stream end", err, false, fuzzMaxWait)
	})
}

// fuzzNativeStream reads in with the native Messages stream. Every payload
// is the data of one event, valid JSON, returned as SSE joins it, except
// the message_stop a clean end after a message_delta with a stop reason
// gets; the last payload before io.EOF is a message_stop; any other end
// carries a usable *outcome.Error, and repeats; an error event's Body is
// its data.
func fuzzNativeStream(t *testing.T, in []byte) {
	s := newNativeStream(context.Background(), io.NopCloser(bytes.NewReader(in)), "claude-haiku-4-5")
	var last []byte
	var err error
	stopped := false // a message_delta with a stop reason was relayed
	for calls := 0; ; calls++ {
		if calls > len(in)+2 {
			t.Fatalf("native Next did not end after %d calls", calls)
		}
		_ = s.Pending()
		var p []byte
		if p, err = s.Next(); err != nil {
			if p != nil {
				t.Fatalf("native Next returned payload %q with error %v", p, err)
			}
			break
		}
		made := stopped && string(p) == `{"type":"message_stop"}`
		if !json.Valid(p) || (!made && !bytes.Contains(in, bytes.SplitN(p, []byte("\n"), 2)[0])) {
			t.Fatalf("native payload %q is not one of the input's JSON data fields", p)
		}
		// The stream reads an event's type from its data, else from its
		// name, which the payload does not carry: a data without a type
		// may have been a message_delta.
		if typ := gjson.GetBytes(p, "type").Str; (typ == "message_delta" || typ == "") && gjson.GetBytes(p, "delta.stop_reason").Type == gjson.String {
			stopped = true
		}
		last = append(last[:0], p...)
	}
	if _, again := s.Next(); (again == io.EOF) != (err == io.EOF) || again == nil {
		t.Fatalf("native Next after %v returned %v, want the same end", err, again)
	}
	for i := range 2 {
		if cerr := s.Close(); cerr != nil {
			t.Fatalf("native Close #%d: %v", i+1, cerr)
		}
	}
	if err == io.EOF {
		// The type is the data's, else the event's name ("event:" takes
		// an optional space).
		if typ := gjson.GetBytes(last, "type").Str; typ != "message_stop" && !bytes.Contains(in, []byte("message_stop")) {
			t.Fatalf("native io.EOF after %q, not a message_stop", last)
		}
		return
	}
	providertest.CheckEnd(t, "native stream end", err, false, fuzzMaxWait)
	var oe *outcome.Error
	if errors.As(err, &oe) && oe.Body != nil && !json.Valid(oe.Body) {
		t.Fatalf("native error Body %q is not an event's JSON data", oe.Body)
	}
}

// FuzzConvertMessage translates arbitrary 200 bodies as Messages answers.
// It must not panic, and either returns one valid chat.completion JSON
// document with one choice, or an error carrying a usable *outcome.Error.
func FuzzConvertMessage(f *testing.F) {
	for _, seed := range []string{
		`{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":6}}`,
		`{"id":"msg_02","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"thinking","thinking":"...","signature":"abc"},{"type":"text","text":"Let me check."},{"type":"text","text":" Two parts."},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Oslo","units":["c"]}}],"stop_reason":"tool_use","usage":{"input_tokens":40,"cache_read_input_tokens":20,"output_tokens":30}}`,
		`{"id":"msg_03","type":"message","content":[],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":4096}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"id":"msg_04","type":"message","content":"not an array"}`,
		`<html>502 Bad Gateway</html>`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, _, err := convertMessage(nil, raw, "claude-haiku-4-5", fuzzNow.Unix())
		if err != nil {
			if out != nil {
				t.Fatalf("convertMessage returned %q with error %v", out, err)
			}
			providertest.CheckEnd(t, "convertMessage", err, false, fuzzMaxWait)
			return
		}
		if !json.Valid(out) {
			t.Fatalf("convertMessage(%q) = %q, not valid JSON", raw, out)
		}
		doc := gjson.ParseBytes(out)
		if doc.Get("object").Str != "chat.completion" || doc.Get("choices.#").Int() != 1 || !doc.Get("choices.0.message").IsObject() {
			t.Fatalf("convertMessage(%q) = %q, not a chat.completion with one choice", raw, out)
		}
	})
}
