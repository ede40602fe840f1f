package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// maxHeadBytes bounds the bytes of an answer's head, the informational
// (1xx) heads before it included, as net/http's Transport bounds them with
// MaxResponseHeaderBytes (whose default is 10 MiB; 1 MiB is net/http's
// server's bound on a request's head, and 200 times the largest head a
// model server sends).
const maxHeadBytes = 1 << 20

// answer is one parsed answer in one allocation: the Response, its
// header fields, the reader of its body's framing and pool.go's body
// around it.
type answer struct {
	resp   http.Response
	fields Fields
	frame  framing
	body   body
}

// Fields are an answer's header fields as its head has them: read one at
// a time by name (Get), without a map, or whole as the http.Header that
// http.ReadResponse would have made of the head (Header), built when first
// asked for. A router reads a handful of a provider's 15 to 25 header
// fields (its rate limits, Retry-After, Content-Type): a map of them all
// is four allocations and a hash of every name for nothing
// (docs/ARCHITECTURE.md, "Upstream connections").
//
// The answer is the request's own, never reused: its fields view the head
// as long as it lives.
type Fields struct {
	head string
	list []field // inline[:n], or memory of its own past len(inline)
	// drop are the fields http.ReadResponse removes from the Header it
	// makes (dropTE and the others), and noCache says it adds
	// Cache-Control: no-cache (an HTTP/1.0 Pragma: no-cache without one).
	drop    uint8
	noCache bool
	header  http.Header // made by Header
	// inline holds the fields of a head of up to 24 fields, more than a
	// provider's answer has.
	inline [24]field
}

// field is a header line of the head: its name is head[at:colon] and its
// value head[colon+1:end] with the spaces around it dropped.
type field struct{ at, colon, end uint32 }

// The fields Fields.drop hides.
const (
	dropTE      = 1 << iota // Transfer-Encoding: the framing's (resp.TransferEncoding)
	dropConn                // Connection: close on HTTP/1.1 (resp.Close)
	dropTrailer             // a chunked answer's Trailer (resp.Trailer)
)

func (f *Fields) name(fl field) string  { return f.head[fl.at:fl.colon] }
func (f *Fields) value(fl field) string { return trimOWS(f.head[fl.colon+1 : fl.end]) }

// dropped says whether the field named k is one of drop's.
func (f *Fields) dropped(k string) bool {
	return f.drop != 0 && (f.drop&dropTE != 0 && k == "Transfer-Encoding" ||
		f.drop&dropConn != 0 && k == "Connection" || f.drop&dropTrailer != 0 && k == "Trailer")
}

// Get is the first value of the field named key, which is in canonical
// form (textproto.CanonicalMIMEHeaderKey's: the head's names are
// canonicalised as it is read); "" when there is none. It is
// Header()[key][0] without the map.
func (f *Fields) Get(key string) string {
	if i := f.index(key, 0); i >= 0 {
		if f.dropped(key) {
			return ""
		}
		return f.value(f.list[i])
	}
	if f.noCache && key == "Cache-Control" {
		return "no-cache"
	}
	return ""
}

// index is the index of the first field named key at or after from, or
// -1.
func (f *Fields) index(key string, from int) int {
	for i := from; i < len(f.list); i++ {
		if fl := f.list[i]; int(fl.colon-fl.at) == len(key) && f.head[fl.at:fl.colon] == key {
			return i
		}
	}
	return -1
}

// Header is the fields as the http.Header http.ReadResponse makes of the
// head, made at the first call; later calls return the same map.
func (f *Fields) Header() http.Header {
	if f.header != nil {
		return f.header
	}
	h := make(http.Header, len(f.list))
	vals := make([]string, len(f.list))
	for i, fl := range f.list {
		k := f.name(fl)
		if f.dropped(k) {
			continue
		}
		v := f.value(fl)
		if vv, ok := h[k]; ok {
			// Repeated Content-Length values are equal (decide refuses
			// others) and count once, as net/http's.
			if k != "Content-Length" {
				h[k] = append(vv, v)
			}
			continue
		}
		vals[i] = v
		h[k] = vals[i : i+1 : i+1]
	}
	if f.noCache {
		h["Cache-Control"] = []string{"no-cache"}
	}
	f.header = h
	return h
}

var (
	errHeadTooLarge = fmt.Errorf("h1: answer's head is over %d bytes", maxHeadBytes)
	errMalformed    = errors.New("h1: malformed answer head")
)

// malformed is the error for a head refused, quoting at most 80 bytes of
// what was refused.
func malformed(what string, b []byte) error {
	if len(b) > 80 {
		b = b[:80]
	}
	return fmt.Errorf("%w: %s %q", errMalformed, what, b)
}

// readAnswer reads one answer's head from br and sets up the reading of
// its body (resp.Body is the framing reader, or http.NoBody), as
// http.ReadResponse does for req's method; budget is what may still be
// read of heads and is lowered by this one's length. It refuses what
// http.ReadResponse refuses and more, never reads an answer differently
// (FuzzReadAnswer checks both on the same bytes). What it refuses that
// net/http accepts, each a head RFC 9112 calls malformed or a sign of
// smuggling:
//   - obs-fold (a header line starting with a space or tab);
//   - a space in a header name ("Name : value");
//   - Content-Length and Transfer-Encoding both present;
//   - a version other than HTTP/1.0 and HTTP/1.1, a status code that is
//     not three digits from 100, control bytes in the status line;
//   - a head (1xx ones included) over maxHeadBytes (net/http's Transport:
//     10 MiB).
//
// The head becomes one string: names and values are substrings of it, the
// names canonicalised in place (textproto.CanonicalMIMEHeaderKey's form),
// all values in one backing array.
func readAnswer(br *bufio.Reader, req *http.Request, budget *int) (*answer, error) {
	raw, fromBuffer, err := readHead(br, *budget)
	if err != nil {
		return nil, err
	}
	*budget -= len(raw)
	a := &answer{}
	fields, err := checkHead(raw)
	if err == nil {
		// raw is checked and its names canonicalised: one copy, then
		// everything is a substring.
		err = a.build(string(raw), fields, req)
	}
	if fromBuffer {
		br.Discard(len(raw))
	}
	if err != nil {
		return nil, err
	}
	if a.frame.kind != noBody {
		a.frame.br = br
		a.frame.resp = &a.resp
		a.resp.Body = &a.frame
	} else {
		a.resp.Body = http.NoBody
	}
	return a, nil
}

// readHead returns the bytes of the next head, its status line to its
// blank line included: a slice of br's buffer not yet consumed (fromBuffer)
// when the head fits in it, a copy when it does not (then consumed). Any
// end of the connection before the blank line is io.ErrUnexpectedEOF.
func readHead(br *bufio.Reader, max int) (raw []byte, fromBuffer bool, err error) {
	scan := 0
	for {
		buf, _ := br.Peek(br.Buffered())
		if end := headEnd(buf, scan); end > 0 {
			if end > max {
				return nil, false, errHeadTooLarge
			}
			return buf[:end], true, nil
		}
		if len(buf) > max {
			return nil, false, errHeadTooLarge
		}
		if len(buf) == br.Size() {
			break
		}
		scan = len(buf)
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return nil, false, unexpectedEOF(err)
		}
	}
	// Longer than the buffer: read it line by line into memory of its own.
	var out []byte
	for line := 0; ; {
		b, err := br.ReadSlice('\n')
		out = append(out, b...)
		if len(out) > max {
			return nil, false, errHeadTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, false, unexpectedEOF(err)
		}
		if l := out[line:]; len(l) == 1 || len(l) == 2 && l[0] == '\r' {
			return out, false, nil
		}
		line = len(out)
	}
}

// headEnd is the length of the head at the start of buf (through its
// blank line, a line ending in LF or CRLF), or 0 when buf holds no whole
// head; the search starts at from, what an earlier call already searched.
// An empty first line ends the head there (the status line is missing).
func headEnd(buf []byte, from int) int {
	switch {
	case len(buf) >= 1 && buf[0] == '\n':
		return 1
	case len(buf) >= 2 && buf[0] == '\r' && buf[1] == '\n':
		return 2
	}
	// The LF before the blank line may be at from-1 or from-2.
	for i := max(from-2, 0); ; {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		switch {
		case i < len(buf) && buf[i] == '\n':
			return i + 1
		case i+1 < len(buf) && buf[i] == '\r' && buf[i+1] == '\n':
			return i + 2
		}
	}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// checkHead checks raw, a whole head, and canonicalises its header names
// in place; it returns the number of header fields.
func checkHead(raw []byte) (int, error) {
	line, rest := nextLine(raw)
	if err := checkStatusLine(line); err != nil {
		return 0, err
	}
	n := 0
	for {
		line, rest = nextLine(rest)
		if len(line) == 0 {
			return n, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			// obs-fold, refused (RFC 9112, section 5.2); net/http
			// refuses it on the first field and joins it on the others.
			return 0, malformed("folded header line", line)
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return 0, malformed("header line", line)
		}
		upper := true
		for i, c := range line[:colon] {
			if !httpguts.IsTokenRune(rune(c)) {
				return 0, malformed("header name", line)
			}
			switch {
			case upper && 'a' <= c && c <= 'z':
				line[i] = c - ('a' - 'A')
			case !upper && 'A' <= c && c <= 'Z':
				line[i] = c + ('a' - 'A')
			}
			upper = c == '-'
		}
		for _, c := range line[colon+1:] {
			if !valueByte(c) {
				return 0, malformed("header value", line)
			}
		}
		n++
	}
}

// valueByte says whether c may be in a header value or a reason phrase:
// HTAB, SP, VCHAR, obs-text (RFC 9110, section 5.5).
func valueByte(c byte) bool { return c == '\t' || c >= ' ' && c != 0x7f }

// checkStatusLine accepts "HTTP/1.x NNN reason", NNN from 100 to 999, the
// reason optional; more spaces before the code are allowed, as net/http
// allows them.
func checkStatusLine(line []byte) error {
	if len(line) < len("HTTP/1.x 200") || string(line[:7]) != "HTTP/1." || line[7] != '0' && line[7] != '1' || line[8] != ' ' {
		return malformed("status line", line)
	}
	code := bytes.TrimLeft(line[9:], " ")
	if len(code) < 3 || code[0] < '1' || code[0] > '9' || !isDigit(code[1]) || !isDigit(code[2]) || len(code) > 3 && code[3] != ' ' {
		return malformed("status line", line)
	}
	for _, c := range code[3:] {
		if !valueByte(c) {
			return malformed("status line", line)
		}
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// nextLine cuts the first line off b, its LF or CRLF dropped. A head
// checked by headEnd ends in a blank line, so there is always one.
func nextLine[T ~string | ~[]byte](b T) (line, rest T) {
	i := 0
	for i < len(b) && b[i] != '\n' {
		i++
	}
	line, rest = b[:i], b[min(i+1, len(b)):]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

// trimOWS drops the spaces and tabs around a header value.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// build fills a.resp and a.fields from head, checked by checkHead and
// holding n header fields, then decides its body's framing as net/http's
// transfer.go does (readTransfer). a.resp.Header is left nil: the
// RoundTripper makes it (Fields.Header).
func (a *answer) build(head string, n int, req *http.Request) error {
	r := &a.resp
	r.Request = req
	line, rest := nextLine(head)
	r.Proto = line[:8]
	r.ProtoMajor, r.ProtoMinor = 1, int(line[7]-'0')
	r.Status = strings.TrimLeft(line[9:], " ")
	r.StatusCode = int(r.Status[0]-'0')*100 + int(r.Status[1]-'0')*10 + int(r.Status[2]-'0')

	f := &a.fields
	f.head = head
	f.list = f.inline[:0]
	if n > len(f.inline) {
		f.list = make([]field, 0, n)
	}
	at := len(head) - len(rest)
	for {
		line, rest = nextLine(rest)
		if line == "" {
			break
		}
		colon := at + strings.IndexByte(line, ':')
		f.list = append(f.list, field{uint32(at), uint32(colon), uint32(at + len(line))})
		at = len(head) - len(rest)
	}

	// Pragma: no-cache is Cache-Control: no-cache (RFC 7234, 5.4), as
	// http.ReadResponse has it.
	if i := f.index("Pragma", 0); i >= 0 && f.value(f.list[i]) == "no-cache" && f.index("Cache-Control", 0) < 0 {
		f.noCache = true
	}
	hasClose := false
	hasKeepAlive := false
	for i := f.index("Connection", 0); i >= 0; i = f.index("Connection", i+1) {
		v := []string{f.value(f.list[i])}
		hasClose = hasClose || httpguts.HeaderValuesContainsToken(v, "close")
		hasKeepAlive = hasKeepAlive || httpguts.HeaderValuesContainsToken(v, "keep-alive")
	}
	if r.ProtoMinor == 0 {
		r.Close = hasClose || !hasKeepAlive
	} else {
		r.Close = hasClose
		if hasClose {
			f.drop |= dropConn
		}
	}
	return a.frame.decide(r, f, req)
}

// decide sets r's ContentLength, TransferEncoding, Close and Trailer and
// f's kind from r's head and its fields h, as net/http's readTransfer,
// parseTransferEncoding, fixLength and fixTrailer do; see readAnswer for
// what is refused more.
func (f *framing) decide(r *http.Response, h *Fields, req *http.Request) error {
	te := h.index("Transfer-Encoding", 0)
	cl := h.index("Content-Length", 0)
	if te >= 0 && cl >= 0 {
		// RFC 9112, 6.3: "ought to be handled as an error"; nginx
		// refuses such an upstream answer too.
		return fmt.Errorf("%w: both Transfer-Encoding and Content-Length", errMalformed)
	}
	chunked := false
	if te >= 0 {
		h.drop |= dropTE
		if r.ProtoMinor >= 1 { // HTTP/1.0 has no transfer codings: ignored
			v := h.value(h.list[te])
			if h.index("Transfer-Encoding", te+1) >= 0 {
				return fmt.Errorf("%w: too many transfer encodings: %q", errMalformed, h.values("Transfer-Encoding"))
			}
			if !asciiEqualFold(v, "chunked") {
				return fmt.Errorf("%w: unsupported transfer encoding: %q", errMalformed, v)
			}
			chunked = true
		}
	}
	n := int64(-1)
	if cl >= 0 {
		v := h.value(h.list[cl])
		for i := h.index("Content-Length", cl+1); i >= 0; i = h.index("Content-Length", i+1) {
			if h.value(h.list[i]) != v {
				return fmt.Errorf("%w: differing Content-Length values %q", errMalformed, h.values("Content-Length"))
			}
		}
		if v == "" {
			return fmt.Errorf("%w: empty Content-Length", errMalformed)
		}
		u, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return fmt.Errorf("%w: bad Content-Length %q", errMalformed, v)
		}
		n = int64(u)
	}

	head := req != nil && req.Method == http.MethodHead
	bodyAllowed := bodyAllowedForStatus(r.StatusCode)
	var length int64 // the body's real length; -1: to the end, or chunked
	switch {
	case head || !bodyAllowed:
		length = 0
	case chunked:
		length = -1
	default:
		length = n
	}
	r.ContentLength = length
	if head {
		r.ContentLength = n
	}
	if chunked {
		f.te[0] = "chunked"
		r.TransferEncoding = f.te[:]
		if err := declaredTrailer(r, h); err != nil {
			return err
		}
	}
	if length == -1 && !chunked && bodyAllowed {
		r.Close = true
	}
	switch {
	case chunked && !head && bodyAllowed:
		f.kind = chunkedBody
	case length > 0:
		f.kind, f.left = lengthBody, length
	case length < 0 && !chunked:
		f.kind = toCloseBody
	default:
		f.kind = noBody
	}
	return nil
}

// declaredTrailer sets r.Trailer from a chunked answer's Trailer fields,
// its names with no values yet, and drops them from h (net/http's
// fixTrailer).
func declaredTrailer(r *http.Response, h *Fields) error {
	i := h.index("Trailer", 0)
	if i < 0 {
		return nil
	}
	h.drop |= dropTrailer
	trailer := make(http.Header)
	for ; i >= 0; i = h.index("Trailer", i+1) {
		for k := range strings.SplitSeq(h.value(h.list[i]), ",") {
			if k = textproto.TrimString(k); k == "" {
				continue
			}
			k = http.CanonicalHeaderKey(k)
			switch k {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				return fmt.Errorf("%w: bad trailer key %q", errMalformed, k)
			}
			trailer[k] = nil
		}
	}
	if len(trailer) > 0 {
		r.Trailer = trailer
	}
	return nil
}

// values are the values of the fields named key, for an error message.
func (f *Fields) values(key string) []string {
	var vv []string
	for i := f.index(key, 0); i >= 0; i = f.index(key, i+1) {
		vv = append(vv, f.value(f.list[i]))
	}
	return vv
}

func bodyAllowedForStatus(status int) bool {
	return !(status >= 100 && status <= 199 || status == 204 || status == 304)
}

func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// Body framings.
const (
	noBody      = iota
	lengthBody  // Content-Length bytes
	chunkedBody // chunked, then the trailer
	toCloseBody // to the end of the connection
)

// framing reads an answer's body off the connection's reader, as
// net/http's body does for the same framing: a body shorter than its
// Content-Length is io.ErrUnexpectedEOF, the last bytes come with io.EOF,
// a chunked body's trailer is read at its end into resp.Trailer.
//
// Reading through a pooled connection (c set), a read that finds the
// buffer empty waits for the connection's next bytes without one (c.wait):
// a stream between events holds no read buffer.
type framing struct {
	br   *bufio.Reader
	c    *conn // the connection br is the read buffer of; nil: br is kept
	resp *http.Response
	kind int
	left int64       // lengthBody: bytes still to come
	cr   chunkReader // chunkedBody
	te   [1]string   // resp.TransferEncoding's backing array
}

func (f *framing) Read(p []byte) (int, error) {
	if f.c != nil && len(p) > 0 && f.br.Buffered() == 0 && f.reads() {
		f.br = f.c.wait()
	}
	switch f.kind {
	case lengthBody:
		if f.left <= 0 {
			return 0, io.EOF
		}
		if int64(len(p)) > f.left {
			p = p[:f.left]
		}
		n, err := f.br.Read(p)
		f.left -= int64(n)
		switch {
		case err == io.EOF && f.left > 0:
			err = io.ErrUnexpectedEOF
		case err == nil && f.left == 0:
			err = io.EOF
		}
		return n, err
	case chunkedBody:
		n, err := f.cr.read(f.br, p)
		if err == io.EOF {
			if terr := f.readTrailer(); terr != nil {
				err = terr
			}
			f.kind = noBody
		}
		return n, err
	case toCloseBody:
		return f.br.Read(p)
	}
	return 0, io.EOF
}

// reads says whether a Read reads the connection (rather than report the
// body's end or its error).
func (f *framing) reads() bool {
	switch f.kind {
	case lengthBody:
		return f.left > 0
	case chunkedBody:
		return f.cr.err == nil
	}
	return f.kind == toCloseBody
}

// Close does nothing: pool.go's body decides the connection's fate.
func (f *framing) Close() error { return nil }

var errTrailerEOF = errors.New("h1: unexpected EOF reading trailer")

// readTrailer reads what follows a chunked body's last chunk, as
// net/http's body.readTrailer does: a blank line, or trailer fields no
// longer than the read buffer.
func (f *framing) readTrailer() error {
	buf, err := f.br.Peek(2)
	if string(buf) == "\r\n" {
		f.br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !seeUpcomingDoubleCRLF(f.br) {
		return errors.New("h1: suspiciously long trailer after chunked body")
	}
	hdr, err := textproto.NewReader(f.br).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return err
	}
	if f.resp.Trailer == nil {
		f.resp.Trailer = http.Header(hdr)
	} else {
		maps.Copy(f.resp.Trailer, http.Header(hdr))
	}
	return nil
}

func seeUpcomingDoubleCRLF(r *bufio.Reader) bool {
	for peekSize := 4; ; peekSize++ {
		buf, err := r.Peek(peekSize)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
