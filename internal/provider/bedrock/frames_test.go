package bedrock

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// endless serves head, then zeros up to limit bytes in all, counting what
// was read.
type endless struct {
	head       []byte
	read, last int
}

func (r *endless) Read(p []byte) (int, error) {
	if r.read >= r.last {
		return 0, io.EOF
	}
	n := min(len(p), r.last-r.read)
	for i := range p[:n] {
		p[i] = 0
		if r.read+i < len(r.head) {
			p[i] = r.head[r.read+i]
		}
	}
	r.read += n
	return n, nil
}

// prelude is a frame's 12-byte prelude, its CRC right.
func prelude(total, headers uint32) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint32(b, total)
	binary.BigEndian.PutUint32(b[4:], headers)
	binary.BigEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
	return b
}

// TestFrameDeclaredSize: a frame is refused on its prelude when it declares
// more than maxFrame, less than a frame's minimum, or more headers than it
// has room for (each made the SDK's decoder read, and hold, up to 4 GiB:
// issue 31, finding 3), a ServerError with nothing read past the
// reader's first buffer; a frame of maxFrame is read.
func TestFrameDeclaredSize(t *testing.T) {
	const served = 64 << 20 // what the hostile provider sends of its frame
	tests := []struct {
		name           string
		total, headers uint32
	}{
		{"4 GiB-16", 1<<32 - 16, 0},
		{"one byte over the cap", maxFrame + 1, 0},
		{"under a frame's minimum", 5, 0},
		{"headers past the frame", 64, 60},
		{"headers of 4 GiB", 1 << 20, 1<<32 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &endless{head: prelude(tt.total, tt.headers), last: served}
			f := newFrames(context.Background(), r)
			_, _, err := f.next()
			if outcome.KindOf(err) != outcome.ServerError {
				t.Errorf("got %v, want a ServerError", err)
			}
			if r.read > frameBuffer {
				t.Errorf("read %d bytes of the frame, want at most the first buffer (%d)", r.read, frameBuffer)
			}
		})
	}
	t.Run("a frame of maxFrame", func(t *testing.T) {
		payload := make([]byte, maxFrame-len(frame(t, "event", "chunk", nil)))
		b := frame(t, "event", "chunk", payload)
		if len(b) != maxFrame {
			t.Fatalf("the frame is %d bytes, want %d", len(b), maxFrame)
		}
		f := newFrames(context.Background(), &endless{head: b, last: len(b)})
		if _, p, err := f.next(); err != nil || len(p) != len(payload) {
			t.Errorf("got %d bytes and %v, want %d", len(p), err, len(payload))
		}
	})
}
