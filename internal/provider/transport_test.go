package provider

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// zeros is a body of n zero bytes that counts what was read of it and
// whether it was closed.
type zeros struct {
	n, read int64
	closed  bool
}

func (z *zeros) Read(p []byte) (int, error) {
	if z.read >= z.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n-z.read)
	clear(p[:k])
	z.read += k
	return int(k), nil
}

func (z *zeros) Close() error { z.closed = true; return nil }

// TestReadBody: a whole answer is read up to its limit
// (limits.max_response_bytes); one longer, or declaring itself longer, is
// a ServerError naming the limit with at most one byte past it read (the
// answer was read whole before, however long: issue 31, finding 3).
// TestReadBodyAllocations: an answer of a declared length is read in one
// allocation of its size.
func TestReadBodyAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	src := bytes.Repeat([]byte("x"), 10<<10)
	r := bytes.NewReader(src)
	resp := &http.Response{StatusCode: http.StatusOK, Body: nopCloser{r}, ContentLength: int64(len(src))}
	n := testing.AllocsPerRun(100, func() {
		r.Reset(src)
		if b, err := ReadBody(context.Background(), "reading x", resp, 1<<20); err != nil || len(b) != len(src) {
			t.Fatalf("got %d bytes and %v", len(b), err)
		}
	})
	if n > 1 {
		t.Errorf("%.0f allocations reading %d bytes of a declared length, want 1", n, len(src))
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func TestReadBody(t *testing.T) {
	const max = 1 << 20
	tests := []struct {
		name          string
		size          int64 // bytes the provider sends
		contentLength int64 // -1: none declared
		max           int64
		wantErr       bool
		wantRead      int64 // at most
	}{
		{"empty", 0, -1, max, false, 0},
		{"at the limit", max, -1, max, false, max},
		{"at the limit, declared", max, max, max, false, max},
		{"one byte over", max + 1, -1, max, true, max + 1},
		{"64 MiB undeclared", 64 << 20, -1, max, true, max + 1},
		{"declared over the limit", 64 << 20, 64 << 20, max, true, 0},
		{"declared more than sent", 1000, 5000, max, false, 1000},
		{"declared less than sent", 5000, 1000, max, false, 5000},
		{"declared less than sent, over the limit", 2 << 20, 1000, max, true, max + 1},
		{"declared over the size hint", 3 << 20, 3 << 20, 4 << 20, false, 3 << 20},
		{"zero limit means the default", 2 << 20, -1, 0, false, 2 << 20},
		{"the default limit", DefaultMaxResponseBytes + 1<<20, -1, 0, true, DefaultMaxResponseBytes + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := &zeros{n: tt.size}
			resp := &http.Response{StatusCode: http.StatusOK, Body: z, ContentLength: tt.contentLength}
			b, err := ReadBody(context.Background(), "reading x", resp, tt.max)
			switch {
			case tt.wantErr:
				if outcome.KindOf(err) != outcome.ServerError || !strings.Contains(err.Error(), "limits.max_response_bytes") {
					t.Errorf("got %v, want a server_error naming limits.max_response_bytes", err)
				}
			case err != nil || int64(len(b)) != tt.size:
				t.Errorf("got %d bytes and %v, want %d", len(b), err, tt.size)
			}
			if z.read > tt.wantRead {
				t.Errorf("read %d bytes, want at most %d", z.read, tt.wantRead)
			}
			if !z.closed {
				t.Error("the body was not closed")
			}
		})
	}
}
