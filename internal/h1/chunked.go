package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// chunkReader decodes a chunked body as net/http/internal's chunkedReader
// does (Go's chunked.go, BSD licence: the same lines accepted and refused,
// the same errors, the same early returns), but reads from the buffer it
// is given at each call rather than one it keeps: a connection gives its
// read buffer back while a stream waits for its next bytes (wait, pool.go)
// and may read on through another. FuzzChunked holds it to
// httputil.NewChunkedReader on the same bytes.
type chunkReader struct {
	n        uint64 // unread bytes in chunk
	err      error
	buf      [2]byte
	checkEnd bool  // whether need to check for \r\n chunk footer
	excess   int64 // "excessive" chunk overhead, for malicious sender detection
}

const maxChunkLineLength = 4096

var errChunkLineTooLong = errors.New("header line too long")

func (cr *chunkReader) beginChunk(br *bufio.Reader) {
	// chunk-size CRLF
	var line []byte
	line, cr.err = readChunkLine(br)
	if cr.err != nil {
		return
	}
	cr.excess += int64(len(line)) + 2 // header, plus \r\n after the chunk data
	line = trimTrailingWhitespace(line)
	line, _, _ = bytes.Cut(line, []byte(";")) // the chunk extension, ignored
	cr.n, cr.err = parseHexUint(line)
	if cr.err != nil {
		return
	}
	// At most 16 bytes of overhead per chunk plus twice its data, as
	// net/http allows.
	cr.excess -= 16 + (2 * int64(cr.n))
	cr.excess = max(cr.excess, 0)
	if cr.excess > 16*1024 {
		cr.err = errors.New("chunked encoding contains too much non-data")
	}
	if cr.n == 0 {
		cr.err = io.EOF
	}
}

func chunkHeaderAvailable(br *bufio.Reader) bool {
	n := br.Buffered()
	if n > 0 {
		peek, _ := br.Peek(n)
		return bytes.IndexByte(peek, '\n') >= 0
	}
	return false
}

// read is chunkedReader.Read on br.
func (cr *chunkReader) read(br *bufio.Reader, b []byte) (n int, err error) {
	for cr.err == nil {
		if cr.checkEnd {
			if n > 0 && br.Buffered() < 2 {
				// Some data: return it rather than wait for more.
				break
			}
			if _, cr.err = io.ReadFull(br, cr.buf[:2]); cr.err == nil {
				if string(cr.buf[:]) != "\r\n" {
					cr.err = errors.New("malformed chunked encoding")
					break
				}
			} else {
				if cr.err == io.EOF {
					cr.err = io.ErrUnexpectedEOF
				}
				break
			}
			cr.checkEnd = false
		}
		if cr.n == 0 {
			if n > 0 && !chunkHeaderAvailable(br) {
				// Enough read: no waiting for the next chunk's size.
				break
			}
			cr.beginChunk(br)
			continue
		}
		if len(b) == 0 {
			break
		}
		rbuf := b
		if uint64(len(rbuf)) > cr.n {
			rbuf = rbuf[:cr.n]
		}
		var n0 int
		n0, cr.err = br.Read(rbuf)
		n += n0
		b = b[n0:]
		cr.n -= uint64(n0)
		// At the end of a chunk, its CRLF is checked next.
		if cr.n == 0 && cr.err == nil {
			cr.checkEnd = true
		} else if cr.err == io.EOF {
			cr.err = io.ErrUnexpectedEOF
		}
	}
	return n, cr.err
}

// readChunkLine reads a line (up to \n) from br, at most
// maxChunkLineLength bytes; the bytes are br's until its next read.
func readChunkLine(br *bufio.Reader) ([]byte, error) {
	p, err := br.ReadSlice('\n')
	if err != nil {
		// A line was due: EOF is unexpected.
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		} else if err == bufio.ErrBufferFull {
			err = errChunkLineTooLong
		}
		return nil, err
	}
	// A chunk line ends in CRLF, with no CR before (RFC 9112 errata 7633).
	if idx := bytes.IndexByte(p, '\r'); idx == -1 {
		return nil, errors.New("chunked line ends with bare LF")
	} else if idx != len(p)-2 {
		return nil, errors.New("invalid CR in chunked line")
	}
	p = p[:len(p)-2] // trim CRLF
	if len(p) >= maxChunkLineLength {
		return nil, errChunkLineTooLong
	}
	return p, nil
}

func trimTrailingWhitespace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func parseHexUint(v []byte) (n uint64, err error) {
	if len(v) == 0 {
		return 0, errors.New("empty hex number for chunk length")
	}
	for i, b := range v {
		switch {
		case '0' <= b && b <= '9':
			b = b - '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return 0, errors.New("invalid byte in chunk length")
		}
		if i == 16 {
			return 0, errors.New("http chunk length too large")
		}
		n <<= 4
		n |= uint64(b)
	}
	return
}
