package intake

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadGrowsWithBytes: buffers grow through the classes as bytes
// arrive, never past the largest body, and every
// byte of capacity is charged until Free.
func TestReadGrowsWithBytes(t *testing.T) {
	tests := []struct {
		name            string
		size            int
		maxBody, budget int64
		wantStatus      int   // 0: read
		wantCharged     int64 // while held
		declared        int64 // Content-Length; 0: none declared (chunked)
	}{
		{"small", 100, 1 << 20, 64 << 20, 0, 4 << 10, 0},
		{"small, declared", 100, 1 << 20, 64 << 20, 0, 1 << 10, 100},
		{"declared just under the first class", 1023, 1 << 20, 64 << 20, 0, 1 << 10, 1023},
		{"declared the first class", 1 << 10, 1 << 20, 64 << 20, 0, 4 << 10, 1 << 10},
		{"declared, second class", 10 << 10, 1 << 20, 64 << 20, 0, 32 << 10, 10 << 10},
		{"declared, max below the first class", 100, 200, 200, 0, 200, 100},
		{"second class", 10 << 10, 1 << 20, 64 << 20, 0, 32 << 10, 0},
		{"past the classes", 3 << 20, 10 << 20, 64 << 20, 0, 4 << 20, 0},
		{"class capped at max", 40 << 10, 64 << 10, 64 << 10, 0, 64 << 10, 0},
		{"exactly max", 64 << 10, 64 << 10, 64 << 10, 0, 64 << 10, 0},
		{"max below the first class", 100, 200, 200, 0, 200, 0},
		{"one byte over max", 64<<10 + 1, 64 << 10, 64 << 20, http.StatusRequestEntityTooLarge, 0, 0},
		{"over max", 70 << 10, 64 << 10, 64 << 20, http.StatusRequestEntityTooLarge, 0, 0},
		{"over budget", 40 << 10, 64 << 10, 36 << 10, http.StatusServiceUnavailable, 0, 0},
		{"empty", 0, 1 << 20, 64 << 20, http.StatusBadRequest, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bud Budget
			r := httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", tt.size)))
			r.ContentLength = -1 // as for a chunked body: nothing declared
			if tt.declared > 0 {
				r.ContentLength = tt.declared
			}
			b, err := bud.Read(httptest.NewRecorder(), r, Limits{MaxBody: tt.maxBody, Budget: tt.budget, ReadTimeout: time.Second})
			if tt.wantStatus != 0 {
				if err == nil || err.Status != tt.wantStatus {
					t.Fatalf("got %v, want status %d", err, tt.wantStatus)
				}
				if tt.wantStatus != http.StatusBadRequest && !err.EndConn {
					t.Error("a body left unread does not end the connection")
				}
				if bud.Used() != 0 {
					t.Errorf("a refused body left %d bytes charged", bud.Used())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b.B) != tt.size || bud.Used() != tt.wantCharged || int64(cap(b.B)) != tt.wantCharged {
				t.Errorf("got %d bytes, cap %d, charged %d; want %d bytes, %d charged", len(b.B), cap(b.B), bud.Used(), tt.size, tt.wantCharged)
			}
			bud.Free(b)
			if bud.Used() != 0 {
				t.Errorf("after Free: %d bytes charged", bud.Used())
			}
		})
	}
}

// TestDeclaredLengthReservesNothing: a body declaring more than the limit
// is refused at once, before anything is charged.
func TestDeclaredLengthReservesNothing(t *testing.T) {
	var bud Budget
	r := httptest.NewRequest("POST", "/", strings.NewReader(`{"a":1}`))
	r.ContentLength = 9_000_000
	if _, err := bud.Read(httptest.NewRecorder(), r, Limits{MaxBody: 1 << 20, Budget: 64 << 20, ReadTimeout: time.Second}); err == nil ||
		err.Status != http.StatusRequestEntityTooLarge || !err.EndConn {
		t.Fatalf("declared 9 MB over a 1 MiB limit: got %v, want 413 ending the connection", err)
	}
	if bud.Used() != 0 {
		t.Errorf("charged %d bytes after a refused body", bud.Used())
	}
}
