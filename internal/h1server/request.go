package h1server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// statusError is a request the server refuses with code before any
// handler sees it; the connection is closed after the answer.
type statusError struct {
	code int
	text string
}

func (e *statusError) Error() string { return strconv.Itoa(e.code) + " " + e.text }

func badRequest(text string) error { return &statusError{http.StatusBadRequest, text} }

// Refusals of a request's head. Each is stricter than or equal to
// net/http's reading (FuzzParse holds the two side by side).
var (
	errHeadTooLarge = &statusError{http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large"}
	errBareLF       = badRequest("line not ended by CRLF")
	errObsFold      = badRequest("folded header line")
	errRequestLine  = badRequest("malformed request line")
	errMethod       = badRequest("invalid method")
	errHeaderLine   = badRequest("malformed header line")
	errNoHost       = badRequest("missing required Host header")
	errManyHosts    = badRequest("too many Host headers")
	errBadHost      = badRequest("malformed Host header")
	errLength       = badRequest("bad Content-Length")
	errManyLengths  = badRequest("more than one Content-Length")
	errLengthAndTE  = badRequest("both Content-Length and Transfer-Encoding")
	errTrailers     = badRequest("trailers are not accepted")
	errTE           = &statusError{http.StatusNotImplemented, "unsupported transfer encoding"}
	errVersion      = &statusError{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	errConnect      = &statusError{http.StatusMethodNotAllowed, "CONNECT is not served"}
	errExpectation  = &statusError{http.StatusExpectationFailed, "Expectation Failed"}
)

// maxHeaderLines bounds the header lines of one request, beside their
// bytes: a map entry and a value each.
const maxHeaderLines = 256

// readHead reads one request head (request line, header lines, blank
// line) from br into buf (reused; returned grown), refusing one longer
// than max bytes or with a line that does not end in CRLF. lines is the
// number of header lines.
func readHead(br *bufio.Reader, buf []byte, max int) (_ []byte, lines int, err error) {
	buf = buf[:0]
	start := 0 // where the current line begins in buf
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max {
			return buf, 0, errHeadTooLarge
		}
		buf = append(buf, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return buf, 0, err
		}
		line := buf[start:]
		if len(line) < 2 || line[len(line)-2] != '\r' {
			return buf, 0, errBareLF
		}
		if len(line) == 2 {
			if start == 0 {
				return buf, 0, errRequestLine // an empty request line
			}
			return buf, lines, nil
		}
		if start > 0 {
			if lines++; lines > maxHeaderLines {
				return buf, 0, errHeadTooLarge
			}
		}
		start = len(buf)
	}
}

// request is a parsed head: what the server needs beside the
// *http.Request it builds.
type request struct {
	method, uri, proto string
	major, minor       int
	header             http.Header
	host               string
	contentLength      int64 // -1: chunked
	close              bool  // the client asked for the connection's end (or HTTP/1.0 without keep-alive)
	expectContinue     bool  // Expect: 100-continue
	// ph holds the header map, the header values and the URL: taken
	// from the pool by parseHead, put back when the answer is complete
	// (parsedHead).
	ph *parsedHead
}

// parseHead parses the head read by readHead: canonicalises the header
// keys in place, then makes the whole head one string whose substrings are
// the method, URI, keys and values, with one backing array for every
// header's value.
func parseHead(b []byte, lines int, r *request) error {
	b = b[:len(b)-2] // the blank line's CRLF
	// Canonicalise keys in place, validating every line first.
	for i := bytes.IndexByte(b, '\n') + 1; i < len(b); {
		end := i + bytes.IndexByte(b[i:], '\n')
		line := b[i : end-1]
		if line[0] == ' ' || line[0] == '\t' {
			return errObsFold
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return errHeaderLine
		}
		for _, c := range line[:colon] {
			if !httpguts.IsTokenRune(rune(c)) {
				return errHeaderLine
			}
		}
		for _, c := range line[colon+1:] {
			if c < ' ' && c != '\t' || c == 0x7f {
				return errHeaderLine
			}
		}
		canonical(line[:colon])
		i = end + 1
	}
	s := string(b)
	*r = request{}
	line, rest, _ := strings.Cut(s, "\r\n")
	var ok bool
	if r.method, line, ok = strings.Cut(line, " "); !ok {
		return errRequestLine
	}
	if r.uri, r.proto, ok = strings.Cut(line, " "); !ok {
		return errRequestLine
	}
	if r.method == "" || strings.IndexFunc(r.method, func(c rune) bool { return !httpguts.IsTokenRune(c) }) >= 0 {
		return errMethod
	}
	switch r.proto {
	case "HTTP/1.1":
		r.major, r.minor = 1, 1
	case "HTTP/1.0":
		r.major, r.minor = 1, 0
	default:
		if _, _, ok := http.ParseHTTPVersion(r.proto); ok {
			return errVersion // HTTP/2's preface (PRI * HTTP/2.0) among them
		}
		return errRequestLine
	}
	if r.method == http.MethodConnect {
		return errConnect
	}
	r.ph = getParsed()
	vals := r.ph.vals[:]
	r.header = r.ph.header
	if lines > len(vals) {
		vals = make([]string, lines)
		r.header = make(http.Header, lines)
	}
	for n := 0; rest != ""; n++ {
		line, rest, _ = strings.Cut(rest, "\r\n")
		k, v, _ := strings.Cut(line, ":")
		vals[n] = strings.Trim(v, " \t")
		if vv, dup := r.header[k]; dup {
			r.header[k] = append(vv, vals[n])
		} else {
			r.header[k] = vals[n : n+1 : n+1]
		}
	}
	return r.check()
}

// check applies the server's rules to the head's fields: Host,
// framing, connection and expectations (net/http's readRequest and
// readTransfer, stricter where they admit a smuggling shape).
func (r *request) check() error {
	h := r.header
	hosts := h["Host"]
	switch {
	case len(hosts) > 1:
		return errManyHosts
	case len(hosts) == 0 && r.minor == 1:
		return errNoHost
	case len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]):
		return errBadHost
	}
	if len(hosts) == 1 {
		r.host = hosts[0]
	}
	delete(h, "Host")
	if hp := h["Pragma"]; len(hp) > 0 && hp[0] == "no-cache" {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = valNoCache
		}
	}
	cl, hasCL := h["Content-Length"]
	te, hasTE := h["Transfer-Encoding"]
	switch {
	case hasTE && hasCL:
		return errLengthAndTE
	case hasTE:
		// One field, one coding, chunked, and HTTP/1.1 only: as nginx
		// and net/http, strict where smuggling lives (RFC 9112 6.1).
		if r.minor == 0 {
			return errTE
		}
		if len(te) != 1 || !asciiEqualFold(te[0], "chunked") {
			return errTE
		}
		if _, ok := h["Trailer"]; ok {
			return errTrailers // trailers are refused (body.go)
		}
		delete(h, "Transfer-Encoding")
		r.contentLength = -1
	case hasCL:
		if len(cl) > 1 {
			return errManyLengths
		}
		n, err := parseLength(cl[0])
		if err != nil {
			return err
		}
		r.contentLength = n
	}
	conn := h["Connection"]
	r.close = httpguts.HeaderValuesContainsToken(conn, "close")
	if r.minor == 0 && !httpguts.HeaderValuesContainsToken(conn, "keep-alive") {
		r.close = true
	}
	if ex := h["Expect"]; len(ex) > 0 {
		if !hasToken(ex[0], "100-continue") {
			if ex[0] != "" {
				return errExpectation
			}
		} else if r.minor == 1 && r.contentLength != 0 {
			r.expectContinue = true
		}
	}
	return nil
}

var valNoCache = []string{"no-cache"}

// parseLength is a Content-Length's value: digits only, at most 2^63-1.
func parseLength(s string) (int64, error) {
	if s == "" {
		return 0, errLength
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, errLength
		}
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return 0, errLength
	}
	return int64(n), nil
}

// build makes the *http.Request handlers see, with body as its Body
// (nil: none).
func (r *request) build(ctx context.Context, remote string, body *body) (*http.Request, error) {
	u := &r.ph.url
	if err := parseRequestURI(r.uri, u); err != nil {
		return nil, badRequest("malformed request URI")
	}
	req := http.Request{
		Method:        r.method,
		URL:           u,
		Proto:         r.proto,
		ProtoMajor:    r.major,
		ProtoMinor:    r.minor,
		Header:        r.header,
		ContentLength: r.contentLength,
		Close:         r.close,
		Host:          u.Host,
		RemoteAddr:    remote,
		RequestURI:    r.uri,
		Body:          http.NoBody,
	}
	if req.Host == "" {
		req.Host = r.host
	}
	if r.contentLength < 0 {
		req.TransferEncoding = valChunked
	}
	if r.contentLength != 0 && body != nil {
		req.Body = body
	}
	return req.WithContext(ctx), nil
}

var valChunked = []string{"chunked"}

// parseRequestURI sets *u to url.ParseRequestURI(uri)'s result. An
// origin-form URI whose path needs no escaping (what API clients send)
// is split in place; any other goes through url.ParseRequestURI
// (TestParseRequestURI holds the two side by side).
func parseRequestURI(uri string, u *url.URL) error {
	path, query, hasQuery := strings.Cut(uri, "?")
	if path == "" || path[0] != '/' {
		return slowRequestURI(uri, u)
	}
	for i := range len(path) {
		if !plainPath[path[i]] {
			return slowRequestURI(uri, u)
		}
	}
	for i := range len(query) {
		if c := query[i]; c < ' ' || c == 0x7f {
			return slowRequestURI(uri, u)
		}
	}
	*u = url.URL{Path: path, RawQuery: query, ForceQuery: hasQuery && query == ""}
	return nil
}

func slowRequestURI(uri string, u *url.URL) error {
	p, err := url.ParseRequestURI(uri)
	if err != nil {
		return err
	}
	*u = *p
	return nil
}

// plainPath are the bytes a path keeps as they are (net/url's
// shouldEscape(c, encodePath) is false for them, and none is '%'): a
// path of only these is its own Path, with no RawPath.
var plainPath = func() (t [256]bool) {
	for _, c := range []byte("$&+,-./0123456789:;=@ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~") {
		t[c] = true
	}
	return t
}()

// canonical canonicalises a valid header key in place, as
// textproto.CanonicalMIMEHeaderKey: upper case first and after each
// dash, lower case elsewhere.
func canonical(k []byte) {
	upper := true
	for i, c := range k {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		k[i] = c
		upper = c == '-'
	}
}

func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range len(s) {
		if lower(s[i]) != lower(t[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// hasToken reports whether the comma-separated list v holds token
// (case-insensitively).
func hasToken(v, token string) bool {
	return httpguts.HeaderValuesContainsToken([]string{v}, token)
}

var errTrailer = errors.New("h1server: trailers after a chunked request body are not accepted")
