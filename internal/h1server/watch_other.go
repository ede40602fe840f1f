//go:build !linux

package h1server

// watcher is Linux's epoll (watch_linux.go); elsewhere a client's hang-up
// is noticed at the answer's next write, and its request is not cancelled
// before.
type watcher struct{}

func newWatcher() (*watcher, error) { return nil, nil }

func (w *watcher) add(*conn)    {}
func (w *watcher) remove(*conn) {}
func (w *watcher) stop()        {}
