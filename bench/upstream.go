package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// Wire bodies of the fake upstream. The non-stream answer is about 300
// bytes; a stream is a role chunk, contentChunks content chunks and a stop
// chunk (20 events), the usage chunk when the request asked for it, then
// [DONE].
const (
	answerBody = `{"id":"chatcmpl-bench0000000000000000000001","object":"chat.completion","created":1700000000,"model":"bench-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, nice to meet you today."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":9,"total_tokens":33}}`
	chunkHead  = `data: {"id":"chatcmpl-bench0000000000000000000001","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,`
	roleEvent  = chunkHead + `"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	textEvent  = chunkHead + `"delta":{"content":" word"},"finish_reason":null}]}` + "\n\n"
	stopEvent  = chunkHead + `"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	usageEvent = `data: {"id":"chatcmpl-bench0000000000000000000001","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":18,"total_tokens":42}}` + "\n\n"
	doneEvent  = "data: [DONE]\n\n"
	modelsBody = `{"object":"list","data":[{"id":"bench-model","object":"model","created":1700000000,"owned_by":"bench"}]}`

	contentChunks = 18
)

// upstream is the fake OpenAI chat-completions server. With interval 0 it
// answers at once (a stream is written chunk by chunk, flushed after each,
// with no pause); with interval > 0 a stream sends chunks content chunks
// one interval apart, ending early when the client goes away.
type upstream struct {
	interval time.Duration
	chunks   int
}

// serveUpstream serves u on ln until ctx ends.
func serveUpstream(ctx context.Context, ln net.Listener, u upstream) error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", u.chat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, modelsBody)
	})
	return serveUntil(ctx, ln, mux)
}

// rateLimitHeaders are what OpenAI announces, with limits far above any
// rate this bench reaches: the router parses and learns them on every
// answer, as it would in production, without ever being held back.
var rateLimitHeaders = [][2]string{
	{"X-Ratelimit-Limit-Requests", "100000000"},
	{"X-Ratelimit-Limit-Tokens", "10000000000"},
	{"X-Ratelimit-Remaining-Requests", "99999999"},
	{"X-Ratelimit-Remaining-Tokens", "9999999000"},
	{"X-Ratelimit-Reset-Requests", "1ms"},
	{"X-Ratelimit-Reset-Tokens", "1ms"},
}

func (u upstream) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	h := w.Header()
	for _, kv := range rateLimitHeaders {
		h.Set(kv[0], kv[1])
	}
	if !gjson.GetBytes(body, "stream").Bool() {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(answerBody)))
		io.WriteString(w, answerBody)
		return
	}
	usage := gjson.GetBytes(body, "stream_options.include_usage").Bool()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	send := func(ev string) bool {
		if _, err := io.WriteString(w, ev); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(roleEvent) {
		return
	}
	n := contentChunks
	if u.interval > 0 {
		n = u.chunks
		t := time.NewTicker(u.interval)
		defer t.Stop()
		for i := 0; i < n; i++ {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
			if !send(textEvent) {
				return
			}
		}
	} else {
		for i := 0; i < n; i++ {
			if !send(textEvent) {
				return
			}
		}
	}
	if !send(stopEvent) {
		return
	}
	if usage && !send(usageEvent) {
		return
	}
	send(doneEvent)
}

// serveUntil serves h on ln until ctx ends, then closes the server.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Close()
		<-errc
		return nil
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", ln.Addr(), err)
	}
}
