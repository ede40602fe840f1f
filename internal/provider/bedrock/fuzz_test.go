package bedrock

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// fuzzMaxWait is the longest wait a header may impose (provider.CapWait).
const fuzzMaxWait = 24 * time.Hour

// FuzzClassifyError classifies arbitrary error answers: any status from
// 400 to 599, any x-amzn-ErrorType, any body. It must not panic and always
// returns a usable *outcome.Error; and the body quoted in the step table's
// answers (echoes) where Bedrock quotes client input leaves each one's
// kind as it is with nothing there.
func FuzzClassifyError(f *testing.F) {
	for _, seed := range []struct {
		status     int
		code, body string
	}{
		{429, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Too many requests"}`},
		{400, "ValidationException", `{"message":"The provided model identifier is invalid."}`},
		{403, "", `{"__type":"com.amazon.coral.service#UnrecognizedClientException","Message":"The security token included in the request is invalid."}`},
		{503, "", `<html>Service Unavailable</html>`},
		{404, "ResourceNotFoundException", `{"message":"Model not found."`},
	} {
		f.Add(seed.status, seed.code, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, status int, code string, body []byte) {
		status = 400 + (status%200+200)%200
		h := http.Header{}
		if code != "" {
			h.Set("X-Amzn-Errortype", code)
		}
		e := ClassifyError(status, h, body, testNow)
		providertest.CheckClassified(t, "ClassifyError", e, fuzzMaxWait)
		if e.Status != status {
			t.Fatalf("status %d, want %d", e.Status, status)
		}
		// The body, quoted where Bedrock quotes a client's input, never
		// changes a kind.
		providertest.FuzzEchoes(t, echoes, classifyAt, string(body))
	})
}

// frame encodes one event-stream message.
func frame(tb testing.TB, messageType, typ string, payload []byte) []byte {
	var m eventstream.Message
	m.Headers.Set(":message-type", eventstream.StringValue(messageType))
	if messageType == "exception" {
		m.Headers.Set(":exception-type", eventstream.StringValue(typ))
	} else {
		m.Headers.Set(":event-type", eventstream.StringValue(typ))
	}
	m.Payload = payload
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// FuzzStream reads arbitrary bytes as a ConverseStream answer and as an
// InvokeModelWithResponseStream answer (natively and translated). Each
// must end: io.EOF, or a classified error that repeats; every
// chunk valid JSON, every native payload one valid JSON event.
func FuzzStream(f *testing.F) {
	var converse, invoke []byte
	for _, ev := range []struct{ typ, payload string }{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{}"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"hi"}}`},
		{"messageStop", `{"stopReason":"end_turn"}`},
		{"metadata", `{"usage":{"inputTokens":1,"outputTokens":2}}`},
	} {
		converse = append(converse, frame(f, "event", ev.typ, []byte(ev.payload))...)
	}
	for _, ev := range []string{
		`{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":1}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
		`{"type":"message_stop"}`,
	} {
		invoke = append(invoke, frame(f, "event", "chunk", []byte(`{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(ev))+`"}`))...)
	}
	f.Add(converse)
	f.Add(invoke)
	f.Add(converse[:len(converse)-7])
	f.Add(append(append([]byte{}, converse[:40]...), frame(f, "exception", "throttlingException", []byte(`{"message":"slow down"}`))...))
	bad := bytes.Clone(invoke)
	bad[len(bad)-1] ^= 0xff // a CRC that does not match
	f.Add(bad)
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		fuzzEnd(t, "converse", newConverseStream(ctx, io.NopCloser(bytes.NewReader(in)), "id", "m", 1, true), len(in), func([]byte) {})
		fuzzEnd(t, "invoke chat", anthropic.NewChatStream(ctx, newInvokeEvents(ctx, bytes.NewReader(in)), io.NopCloser(nil), "m", 1, true), len(in), func([]byte) {})
		fuzzEnd(t, "invoke native", anthropic.NewNativeStream(ctx, newInvokeEvents(ctx, bytes.NewReader(in)), io.NopCloser(nil), "m"), len(in), func(p []byte) {
			if !jsoncheck.Valid(p) {
				t.Fatalf("native payload %q is not valid JSON", p)
			}
		})
	})
}

// fuzzEnd drains s, checking each payload with check and the end.
func fuzzEnd(t *testing.T, what string, s interface {
	Next() ([]byte, error)
	Close() error
}, n int, check func([]byte)) {
	var err error
	for calls := 0; ; calls++ {
		if calls > n+2 {
			t.Fatalf("%s: Next did not end after %d calls", what, calls)
		}
		var p []byte
		if p, err = s.Next(); err != nil {
			if p != nil {
				t.Fatalf("%s: payload %q with error %v", what, p, err)
			}
			break
		}
		if !jsoncheck.Valid(p) {
			t.Fatalf("%s: payload %q is not valid JSON", what, p)
		}
		check(p)
	}
	if _, again := s.Next(); (again == io.EOF) != (err == io.EOF) || again == nil {
		t.Fatalf("%s: Next after %v returned %v, want the same end", what, err, again)
	}
	_ = s.Close()
	providertest.CheckEnd(t, what, err, true, fuzzMaxWait)
}
