package h1server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// response is the http.ResponseWriter of one request. Body bytes wait in
// the connection's buffer until it fills, the handler flushes or returns;
// then the head (on the first send), the buffered bytes and the bytes
// being written go out in one write (writev).
type response struct {
	c      *conn
	req    *request
	body   *body // nil: the request has none
	header http.Header
	// fields are the fields SetField set, nfields of them, outside
	// header.
	fields  [10]field
	nfields int

	status      int
	wroteHeader bool  // the handler (or the server for it) chose the status
	committed   bool  // the head is on the wire
	chunked     bool  // the body goes in chunks (HTTP/1.1, length unknown at the head)
	length      int64 // the body's length from the handler's Content-Length; -1 unknown
	written     int64 // body bytes the handler wrote
	closeAfter  bool  // the connection ends after this answer
	hijacked    bool
	err         error // the first write error: every later write returns it
}

// field is a header field of one value.
type field struct{ key, value string }

var (
	_ http.ResponseWriter = (*response)(nil)
	_ http.Flusher        = (*response)(nil)
	_ http.Hijacker       = (*response)(nil)
)

// Header is the answer's header map until its head is sent; after that a
// new, empty one (changes to it have no effect, as net/http's after the
// head: there are no trailers), made only if asked for.
func (w *response) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header)
	}
	return w.header
}

// SetField sets the header field key, in canonical form, to the one value
// v, as Header()[key] = []string{v} does but without the map: a router's
// answer sets eight to eleven fields of its own, and a map of more than
// eight entries costs four allocations where one of eight costs two
// (docs/ARCHITECTURE.md, "The API listener"). The field is written with the
// head as the map's are (Content-Length is the body's length as there);
// Header does not show it. The last set of a name wins, here or in the
// map. Past ten fields it sets the map; once the head is sent it does
// nothing, as changes to the map do nothing then.
func (w *response) SetField(key, v string) {
	if w.committed {
		return
	}
	if w.header != nil {
		delete(w.header, key)
	}
	for i := range w.nfields {
		if w.fields[i].key == key {
			w.fields[i].value = v
			return
		}
	}
	if w.nfields == len(w.fields) {
		w.Header()[key] = []string{v}
		return
	}
	w.fields[w.nfields] = field{key, v}
	w.nfields++
}

// field is the value of the field named key, from the map, or else from
// SetField's fields.
func (w *response) field(key string) (string, bool) {
	if vv, ok := w.header[key]; ok {
		if len(vv) == 0 {
			return "", true
		}
		return vv[0], true
	}
	for _, f := range w.fields[:w.nfields] {
		if f.key == key {
			return f.value, true
		}
	}
	return "", false
}

// setFields are SetField's fields that the map does not override.
func (w *response) setFields() []field {
	fs := w.fields[:w.nfields]
	if len(w.header) == 0 {
		return fs
	}
	// A name set in the map after SetField set it: the map's (SetField
	// deletes the map's, so the map's is the later). Rare: filtered in
	// place.
	n := 0
	for _, f := range fs {
		if _, ok := w.header[f.key]; !ok {
			fs[n] = f
			n++
		}
	}
	clear(fs[n:])
	w.nfields = n
	return fs[:n]
}

func (w *response) WriteHeader(code int) {
	if w.hijacked {
		w.c.s.logf("http: response.WriteHeader on hijacked connection")
		return
	}
	if w.wroteHeader {
		w.c.s.logf("http: superfluous response.WriteHeader call")
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.informational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	w.length = -1
	if cl := w.header["Content-Length"]; len(cl) == 1 {
		if n, err := parseLength(cl[0]); err == nil {
			w.length = n
		} else {
			delete(w.header, "Content-Length")
		}
		return
	} else if len(cl) > 1 {
		return
	}
	for i, f := range w.fields[:w.nfields] {
		if f.key == "Content-Length" {
			if n, err := parseLength(f.value); err == nil {
				w.length = n
			} else {
				w.nfields--
				w.fields[i] = w.fields[w.nfields]
				w.fields[w.nfields] = field{}
			}
			return
		}
	}
}

// informational writes a 1xx answer at once, with the headers set so far.
func (w *response) informational(code int) {
	if code == http.StatusContinue && w.body != nil {
		w.body.cont = nil // answered
	}
	if w.err != nil {
		return
	}
	h := getHead()
	b := appendStatus(h.b[:0], w.req.minor, code)
	for k, vv := range w.header {
		b = appendField(b, k, vv)
	}
	for _, f := range w.setFields() {
		b = appendValue(b, f.key, f.value)
	}
	b = append(b, "\r\n"...)
	_, w.err = w.c.nc.Write(b)
	h.b = b
	putHead(h)
}

// sendContinue answers Expect: 100-continue when the handler first reads
// the body.
func (w *response) sendContinue() {
	if w.wroteHeader || w.err != nil {
		return
	}
	_, w.err = w.c.nc.Write(continueLine)
}

var continueLine = []byte("HTTP/1.1 100 Continue\r\n\r\n")

func (w *response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.req.method == http.MethodHead {
		return len(p), nil
	}
	c := w.c
	if len(c.out)+len(p) <= outSize {
		c.out = append(c.outBuf(), p...)
		return len(p), nil
	}
	if err := w.send(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends the head and what is buffered.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush for http.ResponseController.
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.send(nil, false)
}

// SetReadDeadline bounds the reading of the request body
// (http.ResponseController). It replaces the head's deadline, which the
// server leaves on the socket until then (conn.rdNone).
func (w *response) SetReadDeadline(t time.Time) error {
	if w.err == errHandlerDone {
		return w.err
	}
	if w.c.killed.Load() {
		return net.ErrClosed
	}
	w.c.rdNone = false
	return w.c.nc.SetReadDeadline(t)
}

// SetWriteDeadline bounds the writes that follow (http.ResponseController).
func (w *response) SetWriteDeadline(t time.Time) error {
	if w.err == errHandlerDone {
		return w.err
	}
	if w.c.killed.Load() {
		return net.ErrClosed
	}
	return w.c.nc.SetWriteDeadline(t)
}

// EnableFullDuplex is a no-op: the body can always be read while the
// answer is written.
func (w *response) EnableFullDuplex() error { return nil }

// Hijack hands the connection to the handler, with the head written if
// the handler chose a status (a WebSocket's 101) and the bytes already
// read from the client in the returned reader.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.wroteHeader || len(w.c.out) > 0 {
		if err := w.send(nil, false); err != nil {
			return nil, nil, err
		}
	}
	w.hijacked = true
	w.c.readDeadlineNone()
	br := w.c.br // the bytes already read, if any
	if br == nil {
		br = bufio.NewReaderSize(w.c.nc, readSize)
	}
	w.c.br = nil // the handler's now, never the pool's
	nc := w.c.hijack()
	return nc, bufio.NewReadWriter(br, bufio.NewWriter(nc)), nil
}

// finish completes the answer after the handler returned: the head if
// not sent (with the body's length), the buffered bytes, the last chunk.
func (w *response) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	_ = w.send(nil, true)
	// A goroutine the handler left behind that writes now gets an error:
	// the connection's buffers are the next request's.
	if w.err == nil {
		w.err = errHandlerDone
	}
	if w.length >= 0 && w.written != w.length && bodyAllowed(w.status) && w.req.method != http.MethodHead {
		w.closeAfter = true // the client waits for bytes that never come
	}
}

// errHandlerDone is what a write after the handler returned gets.
var errHandlerDone = errors.New("h1server: write after the handler returned")

var (
	crlf      = []byte("\r\n")
	lastChunk = []byte("0\r\n\r\n")
)

// send writes, in one writev, the head if not yet sent, the buffered
// bytes and p (as one chunk when chunked), and the last chunk if final.
func (w *response) send(p []byte, final bool) error {
	if w.err != nil {
		return w.err
	}
	c := w.c
	h := getHead()
	hb := h.b[:0]
	if !w.committed {
		hb = w.appendHead(hb, p, final)
		w.committed = true
		// The head is out: its map, and the values in it, are not kept
		// for a stream's life (about a kilobyte a stream with the
		// router's headers: docs/BENCHMARKS.md, "Memory per stream").
		w.header = nil
		clear(w.fields[:w.nfields])
		w.nfields = 0
	}
	n := len(c.out) + len(p)
	iov := append(c.iov[:0], hb, c.out, p)
	if w.chunked {
		if n > 0 {
			hb = strconv.AppendInt(hb, int64(n), 16)
			hb = append(hb, "\r\n"...)
			iov[0] = hb
			iov = append(iov, crlf)
		}
		if final {
			iov = append(iov, lastChunk)
		}
	}
	if len(hb) > 0 || n > 0 || len(iov) > 3 {
		if c.killed.Load() {
			w.err = net.ErrClosed
		} else {
			c.iov = iov
			if c.sock != nil {
				_, w.err = c.sock.WriteBuffers(&c.iov)
			} else {
				_, w.err = c.iov.WriteTo(c.nc)
			}
		}
	}
	clear(iov) // no reference to p stays
	c.iov = iov[:0]
	h.b = hb
	putHead(h)
	c.releaseOut()
	if w.err != nil {
		w.closeAfter = true
	}
	return w.err
}

// appendHead appends the status line and headers: the handler's, then the
// framing, Date, a sniffed Content-Type and Connection the server adds,
// as net/http does. first is the body's first bytes; final means the
// handler returned, so they are the whole body.
func (w *response) appendHead(b, p []byte, final bool) []byte {
	c := w.c
	r := w.req
	h := w.header
	first := c.out
	if len(first) == 0 {
		first = p
	}
	// The body the handler left unread, before the answer goes out:
	// clients that send the whole request before reading could deadlock
	// otherwise (net/http, golang/go#15527).
	if w.body != nil && w.body.err == nil && !w.closeAfter && !w.wantsClose() {
		if !w.body.drain() {
			w.closeAfter = true
		}
	}
	hasBody := bodyAllowed(w.status)
	setLength := false
	switch {
	case !hasBody || w.length >= 0:
	case final && (r.method != http.MethodHead || w.written > 0):
		w.length, setLength = w.written, true
	case r.method == http.MethodHead:
	case r.minor == 1:
		w.chunked = true
	default:
		w.closeAfter = true // HTTP/1.0: the body ends with the connection
	}
	if r.close || c.s.shutting.Load() {
		w.closeAfter = true
	}
	keepAlive10 := false
	if r.minor == 0 && !w.closeAfter && !w.wantsClose() {
		if w.length >= 0 || !hasBody {
			keepAlive10 = true
		} else {
			w.closeAfter = true
		}
	}
	ourClose := w.closeAfter && r.minor == 1 && !w.wantsClose()
	b = appendStatus(b, r.minor, w.status)
	for k, vv := range h {
		switch k {
		case "Transfer-Encoding":
			continue
		case "Connection":
			if ourClose || keepAlive10 {
				continue
			}
		}
		b = appendField(b, k, vv)
	}
	for _, f := range w.setFields() {
		switch f.key {
		case "Transfer-Encoding":
			continue
		case "Connection":
			if ourClose || keepAlive10 {
				continue
			}
		}
		b = appendValue(b, f.key, f.value)
	}
	if setLength {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, w.length, 10)
		b = append(b, "\r\n"...)
	}
	if w.chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	if _, ok := w.field("Date"); !ok {
		b = appendDate(b)
	}
	if _, ok := w.field("Content-Type"); !ok && hasBody && len(first) > 0 && r.method != http.MethodHead {
		b = append(b, "Content-Type: "...)
		b = append(b, http.DetectContentType(first)...)
		b = append(b, "\r\n"...)
	}
	switch {
	case ourClose:
		b = append(b, "Connection: close\r\n"...)
	case keepAlive10:
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	if w.wantsClose() {
		w.closeAfter = true
	}
	return append(b, "\r\n"...)
}

// wantsClose reports whether the handler set Connection: close.
func (w *response) wantsClose() bool {
	if httpguts.HeaderValuesContainsToken(w.header["Connection"], "close") {
		return true
	}
	for _, f := range w.fields[:w.nfields] {
		if f.key == "Connection" {
			return httpguts.HeaderValuesContainsToken([]string{f.value}, "close")
		}
	}
	return false
}

// bodyAllowed reports whether an answer of status may have a body (RFC
// 9110 6.4.1).
func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == http.StatusNoContent || status == http.StatusNotModified)
}

// appendStatus appends the status line.
func appendStatus(b []byte, minor int, code int) []byte {
	if minor == 0 {
		b = append(b, "HTTP/1.0 "...)
	} else {
		b = append(b, "HTTP/1.1 "...)
	}
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	if t := http.StatusText(code); t != "" {
		b = append(b, t...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

// appendField appends a header field's lines; a field with an invalid
// name is dropped and CR or LF in a value become spaces, as net/http
// writes them (no response splitting).
func appendField(b []byte, k string, vv []string) []byte {
	if !httpguts.ValidHeaderFieldName(k) {
		return b
	}
	for _, v := range vv {
		b = appendLine(b, k, v)
	}
	return b
}

// appendValue is appendField of one value.
func appendValue(b []byte, k, v string) []byte {
	if !httpguts.ValidHeaderFieldName(k) {
		return b
	}
	return appendLine(b, k, v)
}

func appendLine(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	v = trimSpace(v)
	start := len(b)
	b = append(b, v...)
	for i := start; i < len(b); i++ {
		if b[i] == '\r' || b[i] == '\n' {
			b[i] = ' '
		}
	}
	return append(b, "\r\n"...)
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r' || s[0] == '\n') {
		s = s[1:]
	}
	for len(s) > 0 {
		c := s[len(s)-1]
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// date is the Date header of the current second, formatted once a
// second.
type date struct {
	sec  int64
	line []byte // "Date: ...\r\n"
}

var dateNow atomic.Pointer[date]

func appendDate(b []byte) []byte {
	now := time.Now()
	sec := now.Unix()
	d := dateNow.Load()
	if d == nil || d.sec != sec {
		line := append([]byte("Date: "), now.UTC().AppendFormat(nil, http.TimeFormat)...)
		d = &date{sec: sec, line: append(line, "\r\n"...)}
		dateNow.Store(d)
	}
	return append(b, d.line...)
}
