package simulated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Config is the `simulated:` block of a provider of type simulated.
type Config struct {
	// Latency is how long a non-stream answer takes. Zero answers at once.
	Latency time.Duration `mapstructure:"latency"`
	// FirstTokenDelay is how long a stream waits before its first chunk.
	// Zero sends it at once.
	FirstTokenDelay time.Duration `mapstructure:"first_token_delay"`
	// TokenInterval is the wait between later stream chunks. Zero sends
	// them back to back.
	TokenInterval time.Duration `mapstructure:"token_interval"`
	// FailureRate is the share of requests (0 to 1) that fail with
	// FailureStatus instead of answering. Probes fail at the same rate.
	FailureRate float64 `mapstructure:"failure_rate"`
	// FailureStatus is the HTTP status of a simulated failure, classified
	// as a real provider's would be (503 overloaded, 429 rate limited...).
	// Zero means 503.
	FailureStatus int `mapstructure:"failure_status"`
	// Reply is the answer's text. Empty means a sentence naming the
	// provider and model and echoing the last user message.
	Reply string `mapstructure:"reply"`
}

// Validate reports every invalid field, joined, each naming its key
// relative to the `simulated:` block.
func (c Config) Validate() error {
	var errs []error
	if c.Latency < 0 {
		errs = append(errs, fmt.Errorf("latency: must not be negative, got %s", c.Latency))
	}
	if c.FirstTokenDelay < 0 {
		errs = append(errs, fmt.Errorf("first_token_delay: must not be negative, got %s", c.FirstTokenDelay))
	}
	if c.TokenInterval < 0 {
		errs = append(errs, fmt.Errorf("token_interval: must not be negative, got %s", c.TokenInterval))
	}
	if !(c.FailureRate >= 0 && c.FailureRate <= 1) { // also rejects NaN
		errs = append(errs, fmt.Errorf("failure_rate: must be between 0 and 1, got %g", c.FailureRate))
	}
	if c.FailureStatus != 0 && (c.FailureStatus < 400 || c.FailureStatus > 599) {
		errs = append(errs, fmt.Errorf("failure_status: must be an HTTP error status (400-599), got %d", c.FailureStatus))
	}
	return errors.Join(errs...)
}

// Type is the provider type simulated, with its `simulated:` block. It
// needs no key and ignores base_url.
var Type = provider.Type{Name: "simulated",
	NewBlock: func() any { return new(Config) },
	Build: func(p provider.Config, _ string, block any) (provider.Adapter, error) {
		return New(p, *block.(*Config))
	}}

// Adapter is a simulated provider. It is safe for concurrent use.
type Adapter struct {
	name string
	cfg  Config
}

var (
	_ provider.Adapter = (*Adapter)(nil)
	_ provider.Prober  = (*Adapter)(nil)
)

// New returns a simulated provider named by p.Name. Errors name the key
// relative to the provider entry (simulated.latency).
func New(p provider.Config, c Config) (*Adapter, error) {
	if err := provider.Under("simulated", c.Validate()); err != nil {
		return nil, err
	}
	if c.FailureStatus == 0 {
		c.FailureStatus = http.StatusServiceUnavailable
	}
	return &Adapter{name: p.Name, cfg: c}, nil
}

// Supports reports the OpenAI chat family (chat, completions,
// embeddings): the simulated provider serves the Responses and Messages
// APIs translated onto chat, like every type without an API of its own
// for them.
func (a *Adapter) Supports(op provider.Op) bool {
	return op == provider.OpChat || op == provider.OpCompletions || op == provider.OpEmbeddings
}

// Probe fails at the configured failure rate.
func (a *Adapter) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return provider.TransportError(ctx, "probing simulated provider", err)
	}
	return a.maybeFail()
}

func (a *Adapter) maybeFail() error {
	if a.cfg.FailureRate > 0 && rand.Float64() < a.cfg.FailureRate {
		st := a.cfg.FailureStatus
		return &outcome.Error{
			Kind:    outcome.ForStatus(st),
			Status:  st,
			Type:    "simulated_error",
			Message: fmt.Sprintf("simulated failure of provider %s (status %d)", a.name, st),
		}
	}
	return nil
}

// wait blocks for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do answers req after the configured delays, or fails. A chat request
// gets what chatAnswer decides (text, JSON or a tool call), a legacy
// completion the reply, embeddings what embeddingBody computes.
func (a *Adapter) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	if err := a.maybeFail(); err != nil {
		return nil, err
	}
	prompt := estimateTokens(len(req.Body))
	var ans answer
	switch req.Op {
	case provider.OpEmbeddings:
	case provider.OpCompletions:
		ans = proseAnswer(a.reply(req))
	default:
		var err error
		if ans, err = a.chatAnswer(req); err != nil {
			return nil, err
		}
	}
	if req.Stream && req.Op != provider.OpEmbeddings {
		return &provider.Response{
			RateLimit: outcome.UnknownRateLimit,
			Stream: &stream{
				ctx: ctx, cfg: &a.cfg, op: req.Op, model: req.Model,
				id: newID(), created: time.Now().Unix(), ans: ans,
				includeUsage: req.IncludeUsage, usage: outcome.Usage{PromptTokens: prompt, Model: req.Model},
			},
		}, nil
	}
	if err := wait(ctx, a.cfg.Latency); err != nil {
		return nil, provider.TransportError(ctx, "waiting for simulated answer", err)
	}
	// The simulated model answers as the model asked for.
	usage := outcome.Usage{PromptTokens: prompt, CompletionTokens: ans.completionTokens(), Model: req.Model}
	var body []byte
	var err error
	switch req.Op {
	case provider.OpEmbeddings:
		var oe *outcome.Error
		if body, err = embeddingBody(req, usage); errors.As(err, &oe) {
			return nil, oe
		}
	case provider.OpCompletions:
		body, err = completionBody(req.Model, ans.text, usage)
	default:
		body, err = chatBody(req.Model, &ans, usage)
	}
	if err != nil {
		return nil, encodeError(err)
	}
	return &provider.Response{Body: body, Usage: usage, RateLimit: outcome.UnknownRateLimit}, nil
}

// reply is the text of an answer: the configured Reply, else a sentence
// naming the provider and model that echoes the last user message or,
// when the last message is a tool result, says what the tool returned.
func (a *Adapter) reply(req *provider.Request) string {
	if a.cfg.Reply != "" {
		return a.cfg.Reply
	}
	var last string
	switch req.Op {
	case provider.OpChat:
		msgs := gjson.GetBytes(req.Body, "messages").Array()
		if name, result, ok := toolResult(msgs); ok {
			if name != "" {
				name += " "
			}
			return fmt.Sprintf("Simulated answer from %s (%s). The tool %sreturned: %s", a.name, req.Model, name, clip(result))
		}
		last = lastUserText(msgs)
	case provider.OpCompletions:
		p := gjson.GetBytes(req.Body, "prompt")
		if p.IsArray() {
			p = p.Get("0")
		}
		last = p.String()
	}
	return fmt.Sprintf("Simulated answer from %s (%s). You said: %s", a.name, req.Model, clip(last))
}

// clip is s on one line, cut after 200 bytes.
func clip(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.Join(strings.Fields(s), " ")
}

func estimateTokens(bodyLen int) int64 { return int64(bodyLen/4 + 1) }

var idSeq struct {
	sync.Mutex
	n uint64
}

func newID() string {
	idSeq.Lock()
	idSeq.n++
	n := idSeq.n
	idSeq.Unlock()
	return "sim-" + strconv.FormatUint(n, 36) + strconv.FormatUint(rand.Uint64()>>40, 36)
}

func wireUsage(u outcome.Usage) *openaiwire.Usage {
	return &openaiwire.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.Total()}
}

// encodeError is the error for an answer that did not encode. The
// answers hold only strings and finite numbers, which always encode.
func encodeError(err error) *outcome.Error {
	return &outcome.Error{Kind: outcome.ServerError, Message: "encoding simulated answer: " + err.Error(), Err: err}
}

func completionBody(model, text string, u outcome.Usage) ([]byte, error) {
	return openaiwire.Append(nil, &openaiwire.Completion{
		ID:      "cmpl-" + newID(),
		Object:  openaiwire.ObjectTextCompletion,
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []openaiwire.CompletionChoice{{Text: text, FinishReason: openaiwire.Finish(openaiwire.FinishStop)}},
		Usage:   wireUsage(u),
	})
}

// stream yields the answer as OpenAI streams it: for text, one chunk per
// piece (the first with the role), then the finish chunk; for a tool
// call, a chunk with the role, the call's id, type and name and empty
// arguments, then one per fragment of the arguments, then the finish
// chunk (tool_calls); then a usage chunk when asked for.
type stream struct {
	ctx          context.Context
	cfg          *Config
	op           provider.Op
	model, id    string
	created      int64
	ans          answer
	includeUsage bool

	mu     sync.Mutex // guards usage (read by Usage from another goroutine)
	usage  outcome.Usage
	next   int // index of the next event: the call's head (if any), the pieces, finish, usage
	closed bool
	enc    openaiwire.Encoder
	buf    []byte
}

func (s *stream) Next() ([]byte, error) {
	if s.closed {
		return nil, &outcome.Error{Kind: outcome.Canceled, Message: "stream closed"}
	}
	head := 0
	if s.ans.call != nil {
		head = 1
	}
	i, n := s.next-head, len(s.ans.pieces) // i: the piece this event sends
	d := s.cfg.TokenInterval
	if s.next == 0 {
		d = s.cfg.FirstTokenDelay
	}
	if i > n {
		d = 0
	}
	if err := wait(s.ctx, d); err != nil {
		return nil, provider.TransportError(s.ctx, "streaming simulated answer", err)
	}
	var chunk any
	switch {
	case i < 0:
		chunk = s.chunk(openaiwire.Delta{Role: "assistant", ToolCalls: []openaiwire.ToolCallDelta{{
			ID: s.ans.call.ID, Type: "function", Function: openaiwire.FunctionDelta{Name: s.ans.call.Function.Name},
		}}}, "", "")
	case i < n:
		p := s.ans.pieces[i]
		if s.ans.call != nil {
			chunk = s.chunk(openaiwire.Delta{ToolCalls: []openaiwire.ToolCallDelta{{Function: openaiwire.FunctionDelta{Arguments: p}}}}, "", "")
		} else {
			chunk = s.chunk(openaiwire.Delta{}, p, "")
		}
		s.mu.Lock()
		s.usage.CompletionTokens += s.ans.tokens(p)
		s.mu.Unlock()
	case i == n && s.ans.call != nil:
		chunk = s.chunk(openaiwire.Delta{}, "", openaiwire.FinishToolCalls)
	case i == n:
		chunk = s.chunk(openaiwire.Delta{}, "", openaiwire.FinishStop)
	case i == n+1 && s.includeUsage:
		chunk = s.usageChunk()
	default:
		return nil, io.EOF
	}
	var err error
	if s.buf, err = s.enc.Append(s.buf[:0], chunk); err != nil {
		return nil, encodeError(err)
	}
	s.next++
	return s.buf, nil
}

// chunk is the event adding d, or text, to the choice; finish "" is
// null. A text delta carries the role and content on the first event,
// content on later ones while there is text, and nothing on the finish.
func (s *stream) chunk(d openaiwire.Delta, text, finish string) any {
	if s.op == provider.OpCompletions {
		return &openaiwire.Completion{ID: s.id, Object: openaiwire.ObjectTextCompletion, Created: s.created, Model: s.model,
			Choices: []openaiwire.CompletionChoice{{Text: text, FinishReason: openaiwire.Finish(finish)}}}
	}
	if s.ans.call == nil {
		if s.next == 0 {
			d.Role = "assistant"
		}
		if text != "" || s.next == 0 {
			d.Content = &text
		}
	}
	return &openaiwire.ChatCompletionChunk{ID: s.id, Object: openaiwire.ObjectChatCompletionChunk, Created: s.created, Model: s.model,
		Choices: []openaiwire.ChunkChoice{{Delta: d, FinishReason: openaiwire.Finish(finish)}}}
}

// usageChunk is the last event: no choices, the usage.
func (s *stream) usageChunk() any {
	u := wireUsage(s.Usage())
	if s.op == provider.OpCompletions {
		return &openaiwire.Completion{ID: s.id, Object: openaiwire.ObjectTextCompletion, Created: s.created, Model: s.model,
			Choices: []openaiwire.CompletionChoice{}, Usage: u}
	}
	return &openaiwire.ChatCompletionChunk{ID: s.id, Object: openaiwire.ObjectChatCompletionChunk, Created: s.created, Model: s.model,
		Choices: []openaiwire.ChunkChoice{}, Usage: u}
}

func (s *stream) Usage() outcome.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

func (s *stream) Close() error {
	s.closed = true
	return nil
}
