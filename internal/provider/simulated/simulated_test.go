package simulated

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

func req(op provider.Op, body string, stream bool) *provider.Request {
	return &provider.Request{Op: op, Model: "sim-1", Body: []byte(body), Stream: stream, IncludeUsage: stream}
}

func TestNonStreamAnswers(t *testing.T) {
	a, err := New(provider.Config{Name: "s"}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		op   provider.Op
		body string
		want string // a substring of the decoded text
	}{
		{provider.OpChat, `{"messages":[{"role":"user","content":[{"type":"text","text":"ping"}]}]}`, "You said: ping"},
		{provider.OpCompletions, `{"prompt":["pong"]}`, "You said: pong"},
		{provider.OpEmbeddings, `{"input":["a","b","c"]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			resp, err := a.Do(context.Background(), req(tt.op, tt.body, false))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(resp.Body, &doc); err != nil {
				t.Fatalf("invalid JSON %s: %v", resp.Body, err)
			}
			if tt.want != "" && !strings.Contains(string(resp.Body), tt.want) {
				t.Errorf("body %s lacks %q", resp.Body, tt.want)
			}
			if tt.op == provider.OpEmbeddings && len(doc["data"].([]any)) != 3 {
				t.Errorf("want 3 embeddings: %s", resp.Body)
			}
			if resp.Usage.PromptTokens == 0 {
				t.Error("no prompt usage")
			}
		})
	}
}

func TestStream(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{Reply: "one two three"})
	resp, err := a.Do(context.Background(), req(provider.OpChat, `{"messages":[]}`, true))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var finish string
	var usage int64
	for {
		p, err := resp.Stream.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(p, &c); err != nil {
			t.Fatalf("chunk %s: %v", p, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			usage = c.Usage.CompletionTokens
		}
	}
	if text.String() != "one two three" || finish != "stop" || usage != 3 {
		t.Errorf("text %q finish %q usage %d", text.String(), finish, usage)
	}
	if resp.Stream.Usage().CompletionTokens != 3 {
		t.Errorf("Usage() = %+v", resp.Stream.Usage())
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		status int
		want   outcome.Kind
	}{{503, outcome.Overloaded}, {429, outcome.RateLimited}, {500, outcome.ServerError}, {401, outcome.Auth}, {400, outcome.ClientError}}
	for _, tt := range tests {
		a, _ := New(provider.Config{Name: "s"}, Config{FailureRate: 1, FailureStatus: tt.status})
		_, err := a.Do(context.Background(), req(provider.OpChat, `{}`, false))
		var oe *outcome.Error
		if !errors.As(err, &oe) || oe.Kind != tt.want || oe.Status != tt.status {
			t.Errorf("status %d: got %v, want kind %v", tt.status, err, tt.want)
		}
		if a.Probe(context.Background()) == nil {
			t.Errorf("status %d: probe succeeded on a provider failing every call", tt.status)
		}
	}
}

func TestCancelInterruptsLatency(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{Latency: time.Hour, FirstTokenDelay: time.Hour})
	for _, stream := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		resp, err := a.Do(ctx, req(provider.OpChat, `{}`, stream))
		if stream {
			if err != nil {
				t.Fatal(err)
			}
			_, err = resp.Stream.Next()
		}
		if k := outcome.KindOf(err); k != outcome.Canceled {
			t.Errorf("stream=%v: kind %v, want canceled (%v)", stream, k, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{Latency: -1}, {FailureRate: 1.5}, {FailureStatus: 200}} {
		if _, err := New(provider.Config{}, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	// Every problem at once, named under the entry's simulated block.
	_, err := New(provider.Config{}, Config{Latency: -1, FirstTokenDelay: -2, TokenInterval: -3, FailureRate: 2, FailureStatus: 200})
	want := "simulated.latency: must not be negative, got -1ns\n" +
		"simulated.first_token_delay: must not be negative, got -2ns\n" +
		"simulated.token_interval: must not be negative, got -3ns\n" +
		"simulated.failure_rate: must be between 0 and 1, got 2\n" +
		"simulated.failure_status: must be an HTTP error status (400-599), got 200"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want\n%s", err, want)
	}
}
