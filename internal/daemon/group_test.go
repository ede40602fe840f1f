package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/config"
)

// TestGroup: components start in order and stop in reverse; a failed
// start stops the ones already started, in reverse, and never the failed
// one or those after it.
func TestGroup(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		failAt  string // the component whose start fails; "" none
		wantErr error
		want    []string // the events, in order, through a final stop
	}{
		{name: "all start", want: []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}},
		{name: "first fails", failAt: "a", wantErr: boom, want: []string{"start a"}},
		{name: "middle fails", failAt: "b", wantErr: boom, want: []string{"start a", "start b", "stop a"}},
		{name: "last fails", failAt: "c", wantErr: boom, want: []string{"start a", "start b", "start c", "stop b", "stop a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			part := func(name string) component {
				return component{name: name,
					start: func() error {
						got = append(got, "start "+name)
						if name == tc.failAt {
							return boom
						}
						return nil
					},
					stop: func(context.Context) { got = append(got, "stop "+name) }}
			}
			var g group
			err := g.start(part("a"), component{name: "nothing to start or stop"}, part("b"), part("c"))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("start: got %v, want %v", err, tc.wantErr)
			}
			g.stop(context.Background())
			g.stop(context.Background()) // a second stop stops nothing again
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLoopStop: a loop's stop ends its goroutine and waits for it, and may
// be called again.
func TestLoopStop(t *testing.T) {
	ended := false
	l := goLoop(func(ctx context.Context) {
		<-ctx.Done()
		ended = true
	})
	l.stop()
	if !ended {
		t.Fatal("stop returned before the loop ended")
	}
	l.stop()
}

// TestStartFailsCleanly: a daemon whose admin address is taken does not
// start, says which key, and leaves nothing behind: the API address is
// free again and no goroutine outlives it (TestMain checks).
func TestStartFailsCleanly(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := free.Addr().String()
	free.Close()
	t.Setenv("LLMROUTER_LISTEN", apiAddr)
	t.Setenv("LLMROUTER_ADMIN_LISTEN", taken.Addr().String())
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	d, err := start(cfg, "", slog.New(slog.DiscardHandler), testOptions)
	if err == nil {
		d.Shutdown()
		t.Fatal("started on a taken admin address")
	}
	if !strings.HasPrefix(err.Error(), "admin_listen: ") {
		t.Errorf("error %q does not name admin_listen", err)
	}
	again, err := net.Listen("tcp", apiAddr)
	if err != nil {
		t.Fatalf("the API address is still held after the failed start: %v", err)
	}
	again.Close()
}
