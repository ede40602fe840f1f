package providertest

import (
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// MaxMessage bounds a classified error's message in the adapters' fuzz
// targets: it travels into logs and client answers. provider.MaxMessage
// bytes of provider text, the cut mark, U+FFFD replacements and an
// adapter's own prefix fit in it.
const MaxMessage = 2048

// CheckClassified fails tb unless e is a classified error fit for a client
// and a log line: a failure kind the outcome package knows (TargetMissing
// included: outcome.Kinds lists them all), a wait within [0, maxWait], a
// RateLimit with counts of -1 (unknown) or more and waits within
// [0, maxWait], and a valid UTF-8 message of at most MaxMessage bytes.
func CheckClassified(tb testing.TB, what string, e *outcome.Error, maxWait time.Duration) {
	tb.Helper()
	if e != nil {
		rl := e.RateLimit
		for _, n := range [...]int64{rl.LimitRequests, rl.RemainingRequests, rl.LimitTokens, rl.RemainingTokens} {
			if n < -1 {
				tb.Fatalf("%s: RateLimit %+v has a count below -1", what, rl)
			}
		}
		for _, d := range [...]time.Duration{rl.ResetRequests, rl.ResetTokens, rl.RetryAfter} {
			if d < 0 || d > maxWait {
				tb.Fatalf("%s: RateLimit %+v has a wait outside [0, %v]", what, rl, maxWait)
			}
		}
	}
	switch {
	case e == nil:
		tb.Fatalf("%s: nil *outcome.Error", what)
	case e.Kind == outcome.OK || int(e.Kind) >= len(outcome.Kinds()):
		tb.Fatalf("%s: kind %v, want a known failure kind", what, e.Kind)
	case e.RetryAfter < 0 || e.RetryAfter > maxWait:
		tb.Fatalf("%s: RetryAfter %v, want within [0, %v]", what, e.RetryAfter, maxWait)
	case !utf8.ValidString(e.Message):
		tb.Fatalf("%s: message %q is not valid UTF-8", what, e.Message)
	case len(e.Message) > MaxMessage:
		tb.Fatalf("%s: message of %d bytes, want at most %d", what, len(e.Message), MaxMessage)
	}
}

// CheckEnd fails tb unless err ends a stream properly: io.EOF when eofOK,
// otherwise an error carrying a classified *outcome.Error (CheckClassified).
func CheckEnd(tb testing.TB, what string, err error, eofOK bool, maxWait time.Duration) {
	tb.Helper()
	if eofOK && err == io.EOF {
		return
	}
	var oe *outcome.Error
	if !errors.As(err, &oe) {
		tb.Fatalf("%s: error %v (%T) carries no *outcome.Error", what, err, err)
	}
	CheckClassified(tb, what, oe, maxWait)
}

// CheckChunk fails tb unless p is one line of JSON shaped like an OpenAI
// chat.completion.chunk (what the translating adapters emit).
func CheckChunk(tb testing.TB, p []byte) {
	tb.Helper()
	var doc struct {
		Object  string          `json:"object"`
		Choices json.RawMessage `json:"choices"`
	}
	for _, c := range p {
		if c == '\r' || c == '\n' {
			tb.Fatalf("payload %q is not a one-line JSON document", p)
		}
	}
	if err := json.Unmarshal(p, &doc); err != nil {
		tb.Fatalf("payload %q is not a one-line JSON document: %v", p, err)
	}
	if doc.Object != "chat.completion.chunk" || len(doc.Choices) == 0 || doc.Choices[0] != '[' {
		tb.Fatalf("payload %q is not a chat.completion.chunk", p)
	}
}
