package anthropic

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

const benchRequest = `{"model":"gpt-4o-mini","messages":[
{"role":"system","content":"You are a helpful assistant. Answer briefly."},
{"role":"user","content":"What is the weather in Oslo, and what should I wear today?"},
{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_01","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
{"role":"tool","tool_call_id":"toolu_01","content":"12C, light rain, wind 5 m/s from the west"}],
"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city",
"parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}}}],
"max_tokens":512,"temperature":0.7}`

const benchAnswer = `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",
"content":[{"type":"text","text":"It is 12°C with light rain in Oslo. Wear a waterproof jacket, layers and shoes that can handle puddles."}],
"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":180,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":31}}`

// bench50 is a 50-event stream: start, block start, a ping, 44 text
// deltas, block stop, message_delta, message_stop.
var bench50 = func() string {
	ev := []string{evStart, evTextStart, evPing}
	for i := range 44 {
		ev = append(ev, evText(0, fmt.Sprintf("word%d ", i)))
	}
	ev = append(ev, evStop0, evDelta("end_turn", 44), evMsgStop)
	return sseBody(ev...)
}()

func BenchmarkTranslate(b *testing.B) {
	req := chatReq(benchRequest)
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		var err error
		if dst, err = translate(dst[:0], req, DefaultMaxTokens); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConvertMessage(b *testing.B) {
	raw := []byte(benchAnswer)
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		var err error
		if dst, _, err = convertMessage(dst[:0], raw, testModel, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream50 is the stream translation alone, from bytes.
func BenchmarkStream50(b *testing.B) {
	b.ReportAllocs()
	r := strings.NewReader(bench50)
	for b.Loop() {
		r.Reset(bench50)
		s := newStream(context.Background(), io.NopCloser(r), testModel, 1, true)
		n := 0
		for {
			_, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 47 {
			b.Fatalf("got %d chunks, want 47", n)
		}
	}
}

// BenchmarkDoNonStream is one whole non-stream attempt over loopback HTTP.
func BenchmarkDoNonStream(b *testing.B) {
	a, _ := newTestAdapter(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchAnswer)
	})
	req := chatReq(benchRequest)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Do(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoStream50 is one whole streamed attempt of 50 events over
// loopback HTTP, drained.
func BenchmarkDoStream50(b *testing.B) {
	a, _ := newTestAdapter(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeSSE(w, bench50)
	})
	req := chatReq(benchRequest)
	req.Stream, req.IncludeUsage = true, true
	b.ReportAllocs()
	for b.Loop() {
		resp, err := a.Do(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Stream.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		_ = resp.Stream.Close()
	}
}

// BenchmarkNativeStream50 is the native Messages stream alone, from bytes:
// the same 50 events as BenchmarkStream50, passed on unchanged.
func BenchmarkNativeStream50(b *testing.B) {
	b.ReportAllocs()
	r := strings.NewReader(bench50)
	for b.Loop() {
		r.Reset(bench50)
		s := newNativeStream(context.Background(), io.NopCloser(r), testModel)
		n := 0
		for {
			_, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 50 {
			b.Fatalf("got %d payloads, want 50", n)
		}
	}
}

// benchMessages is a native Messages request the size of benchRequest.
const benchMessages = `{"model":"claude-opus-5-5","max_tokens":512,"temperature":0.7,
"system":[{"type":"text","text":"You are a helpful assistant. Answer briefly.","cache_control":{"type":"ephemeral"}}],
"messages":[{"role":"user","content":"What is the weather in Oslo, and what should I wear today?"},
{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Oslo"}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"12C, light rain, wind 5 m/s from the west"}]}],
"tools":[{"name":"get_weather","description":"Current weather for a city",
"input_schema":{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}}]}`

// BenchmarkDoMessagesNonStream is one whole native non-stream attempt over
// loopback HTTP (beside BenchmarkDoNonStream, the translated one).
func BenchmarkDoMessagesNonStream(b *testing.B) {
	a, _ := newTestAdapter(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchAnswer)
	})
	req := messagesReq(b, benchMessages)
	req.Native = nativeHeaders("", "claude-code-20250219,interleaved-thinking-2025-05-14")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Do(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoMessagesStream50 is one whole native streamed attempt of 50
// events over loopback HTTP, drained (beside BenchmarkDoStream50).
func BenchmarkDoMessagesStream50(b *testing.B) {
	a, _ := newTestAdapter(b, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeSSE(w, bench50)
	})
	req := messagesReq(b, benchMessages)
	req.Stream = true
	b.ReportAllocs()
	for b.Loop() {
		resp, err := a.Do(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Stream.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		_ = resp.Stream.Close()
	}
}
