// Package upstream is the bench's fake OpenAI chat-completions server, run
// in its own process (the bench re-executed with -role upstream), and what
// the bench needs to start it.
package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/proc"
	"github.com/tidwall/gjson"
)

// Model is the only model the upstream knows; the load asks the proxies
// for it and the router maps it to the upstream's model of the same name.
const Model = "bench-model"

// Wire bodies of the fake upstream. The non-stream answer is about 300
// bytes; a stream is a role chunk, ContentChunks content chunks and a stop
// chunk (20 events), the usage chunk when the request asked for it, then
// [DONE]. TextEvent and DoneEvent are exported for the load generator,
// which checks for the one and counts the other.
const (
	answerBody = `{"id":"chatcmpl-bench0000000000000000000001","object":"chat.completion","created":1700000000,"model":"bench-model","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, nice to meet you today."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":9,"total_tokens":33}}`
	chunkHead  = `data: {"id":"chatcmpl-bench0000000000000000000001","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,`
	roleEvent  = chunkHead + `"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	TextEvent  = chunkHead + `"delta":{"content":" word"},"finish_reason":null}]}` + "\n\n"
	stopEvent  = chunkHead + `"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	usageEvent = `data: {"id":"chatcmpl-bench0000000000000000000001","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":18,"total_tokens":42}}` + "\n\n"
	DoneEvent  = "data: [DONE]\n\n"
	modelsBody = `{"object":"list","data":[{"id":"bench-model","object":"model","created":1700000000,"owned_by":"bench"}]}`

	ContentChunks = 18
)

// Config is how the fake upstream answers. With Interval 0 it answers at
// once (a stream is written chunk by chunk, flushed after each, with no
// pause); with Interval > 0 a stream sends Chunks content chunks one
// Interval apart, ending early when the client goes away.
//
// With CertFile and KeyFile set (TLS mode) every listener but the control
// one serves HTTPS, with HTTP/2 when the client offers it (ALPN h2) and
// HTTP/1.1 otherwise.
type Config struct {
	Interval time.Duration
	Chunks   int
	CertFile string
	KeyFile  string
}

// Serve serves the fake upstream until ctx ends: on each of lns, one
// listener per target by name, each counting its own connections; and the
// counters of all (GET /stats) on control.
func Serve(ctx context.Context, lns map[string]net.Listener, control net.Listener, c Config) error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", c.chat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, modelsBody)
	})
	var tlsConfig *tls.Config
	if c.CertFile != "" {
		var err error
		if tlsConfig, err = serverTLS(c.CertFile, c.KeyFile); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	all := map[string]*counts{}
	errc := make(chan error, len(lns)+1)
	for name, ln := range lns {
		n := newCounts()
		all[name] = n
		srv := &http.Server{Handler: counted(mux), ConnContext: connContext,
			TLSConfig: tlsConfig, HTTP2: &http.HTTP2Config{MaxConcurrentStreams: maxConcurrentStreams}}
		// Connections are counted as TCP accepts, under TLS.
		ln = countingListener{Listener: ln, c: n}
		if tlsConfig != nil {
			ln = tls.NewListener(ln, tlsConfig)
		}
		go func() { errc <- proc.ServeUntil(ctx, srv, ln) }()
	}
	go func() { errc <- proc.ServeUntil(ctx, &http.Server{Handler: statsHandler(all)}, control) }()
	// The first to end (ctx, or a failed listener) ends all.
	var errs []error
	for range len(lns) + 1 {
		errs = append(errs, <-errc)
		cancel()
	}
	return errors.Join(errs...)
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

func (c Config) chat(w http.ResponseWriter, r *http.Request) {
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
	n := ContentChunks
	if c.Interval > 0 {
		n = c.Chunks
		t := time.NewTicker(c.Interval)
		defer t.Stop()
		for i := 0; i < n; i++ {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
			if !send(TextEvent) {
				return
			}
		}
	} else {
		for i := 0; i < n; i++ {
			if !send(TextEvent) {
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
	send(DoneEvent)
}

// Role is the -role value the bench re-executes itself with to serve the
// upstream.
const Role = "upstream"

// Handle is a started upstream.
type Handle struct {
	Proc *proc.Proc
	// TLS is the client configuration that trusts the upstream's CA; nil
	// for a plain upstream. Give each http.Transport a Clone: one that
	// speaks HTTP/2 adds "h2" to its config's NextProtos.
	TLS      *tls.Config
	bases    map[string]string
	statsURL string
	control  *http.Client
}

// Base is the base URL (http://127.0.0.1:PORT, or https://) of the
// listener for name.
func (h *Handle) Base(name string) string { return h.bases[name] }

// Close closes the idle connection to the control listener.
func (h *Handle) Close() { h.control.CloseIdleConnections() }

// Start re-executes the bench (self) as the fake upstream with one
// listener per name (its fds 3, 4, ... in the order of names), then the
// control listener (Stats). The flags it passes are the ones the bench's
// main parses for Role. caFile is the CA that signed c.CertFile (TLS mode).
func Start(ctx context.Context, f *proc.Fleet, self string, c Config, caFile string, names []string, startTimeout time.Duration) (*Handle, error) {
	clientTLS, err := ClientTLS(caFile)
	if err != nil {
		return nil, err
	}
	scheme := "http://"
	if c.CertFile != "" {
		scheme = "https://"
	}
	var files []*os.File
	defer func() {
		for _, lf := range files {
			lf.Close()
		}
	}()
	h := &Handle{TLS: clientTLS, bases: map[string]string{}, control: &http.Client{Transport: &http.Transport{}}}
	for _, name := range append(slices.Clone(names), "") {
		lf, addr, err := proc.ListenerFile()
		if err != nil {
			return nil, err
		}
		files = append(files, lf)
		if name == "" {
			h.statsURL = "http://" + addr + "/stats"
		} else {
			h.bases[name] = scheme + addr
		}
	}
	args := []string{"-role", Role, "-listeners", strings.Join(names, ","),
		"-chunk-interval", c.Interval.String(), "-chunks", fmt.Sprint(c.Chunks)}
	if c.CertFile != "" {
		args = append(args, "-tls-cert", c.CertFile, "-tls-key", c.KeyFile)
	}
	p, err := f.Start("upstream", self, args, proc.Env(), syscall.SIGKILL, files...)
	if err != nil {
		return nil, err
	}
	h.Proc = p
	for _, name := range names {
		if err := proc.WaitHTTP(ctx, p, h.Base(name)+"/v1/models", h.TLS, startTimeout); err != nil {
			return nil, err
		}
	}
	return h, nil
}
