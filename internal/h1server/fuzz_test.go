package h1server

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// parsed is what a request is, for the comparison: every field a handler
// reads, and the body's bytes.
type parsed struct {
	Method, RequestURI, URL, Proto string
	Major, Minor                   int
	Host                           string
	Header                         http.Header
	ContentLength                  int64
	TransferEncoding               []string
	Close                          bool
	Body                           string
}

func toParsed(r *http.Request) (parsed, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	return parsed{Method: r.Method, RequestURI: r.RequestURI, URL: r.URL.String(), Proto: r.Proto, Major: r.ProtoMajor, Minor: r.ProtoMinor,
		Host: r.Host, Header: r.Header, ContentLength: r.ContentLength, TransferEncoding: r.TransferEncoding, Close: r.Close, Body: string(b)}, err
}

// ours reads the first request of data as the server does.
func ours(data []byte) (parsed, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	hb, lines, err := readHead(br, nil, len(data)+4096)
	if err != nil {
		return parsed{}, err
	}
	r := new(request)
	if err := parseHead(hb, lines, r); err != nil {
		return parsed{}, err
	}
	req, err := r.build(context.Background(), "", &body{c: &conn{br: br}, n: r.contentLength})
	if err != nil {
		return parsed{}, err
	}
	return toParsed(req)
}

// theirs reads it as net/http's server does: http.ReadRequest, then the
// checks of its conn.readRequest and serve (Host, header validity,
// Expect).
func theirs(data []byte) (parsed, error) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		return parsed{}, err
	}
	if req.ProtoMajor != 1 {
		return parsed{}, errVersion
	}
	// http.ReadRequest deletes Host; the server checks it first, as
	// textproto read it.
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	_, _ = tp.ReadLine()
	mh, _ := tp.ReadMIMEHeader()
	hosts, haveHost := mh["Host"]
	if req.ProtoAtLeast(1, 1) && (!haveHost || len(hosts) == 0) && req.Method != "CONNECT" {
		return parsed{}, errNoHost
	}
	if len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
		return parsed{}, errBadHost
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return parsed{}, errHeaderLine
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return parsed{}, errHeaderLine
			}
		}
	}
	if ex := req.Header.Get("Expect"); ex != "" && !hasToken(ex, "100-continue") {
		return parsed{}, errExpectation
	}
	return toParsed(req)
}

// FuzzParse holds the parser to net/http's: for the same bytes, the same
// request (method, URI, proto, Host, headers, length, framing, Close and
// body), or a refusal here; never a different request.
func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ours(data)
		if err != nil {
			return // a refusal: allowed
		}
		want, werr := theirs(data)
		if werr != nil {
			t.Fatalf("accepted what net/http refuses (%v):\n%q\ngot %+v", werr, data, got)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("a different request for\n%q\ngot  %+v\nwant %+v", data, got, want)
		}
	})
}

// seeds are requests real clients send and the smuggling shapes.
var seeds = []string{
	// The OpenAI SDK (Python, then Node).
	"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\nAccept: application/json\r\n" +
		"Content-Type: application/json\r\nUser-Agent: OpenAI/Python 1.99.0\r\nX-Stainless-Lang: python\r\nX-Stainless-Package-Version: 1.99.0\r\n" +
		"X-Stainless-Os: Linux\r\nX-Stainless-Arch: x64\r\nX-Stainless-Runtime: CPython\r\nX-Stainless-Runtime-Version: 3.12.3\r\nAuthorization: Bearer sk-test\r\n" +
		"X-Stainless-Async: false\r\nx-stainless-retry-count: 0\r\nx-stainless-read-timeout: 600\r\nContent-Length: 68\r\n\r\n" +
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}` + "\n\n\n\n\n\n",
	"POST /v1/responses HTTP/1.1\r\naccept: application/json\r\ncontent-type: application/json\r\nuser-agent: OpenAI/JS 5.0.0\r\nx-stainless-lang: js\r\n" +
		"authorization: Bearer sk\r\nhost: localhost:8080\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\n{}",
	// The Anthropic SDK, Claude Code's headers.
	"POST /v1/messages?beta=true HTTP/1.1\r\nHost: localhost:8080\r\nAccept: application/json\r\nAnthropic-Version: 2023-06-01\r\n" +
		"anthropic-beta: claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14\r\nanthropic-dangerous-direct-browser-access: true\r\n" +
		"content-type: application/json\r\nuser-agent: claude-cli/2.0.0 (external, cli)\r\nx-app: cli\r\nx-api-key: sk-ant\r\n" +
		"x-stainless-helper-method: stream\r\nx-stainless-timeout: 600\r\nAccept-Encoding: gzip, deflate, br, zstd\r\nContent-Length: 3\r\n\r\n{}\n",
	"GET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /v1/responses HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
	"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET / HTTP/1.0\r\n\r\n",
	"GET http://example.com/x?y=1 HTTP/1.1\r\nHost: other\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: \r\nx:  b \t\r\n\r\n",
	// Smuggling shapes.
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nX: y\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\nHost: a\nContent-Length: 1\n\na",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\na",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\na\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=" + strings.Repeat("x", 100) + "\r\na\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTrailer: X\r\n\r\n1\r\na\r\n0\r\nX: y\r\n\r\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n",
	"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET //a/../b HTTP/1.1\r\nHost: a\r\n\r\n",
}
