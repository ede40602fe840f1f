package openaiwire

import (
	"encoding/json"
	"sync"
)

// Decode is json.Unmarshal(body, cr), run on a goroutine of its own whose
// stack ends with it: encoding/json's frames recur once per nesting level
// (decodeState.object 864 B, array 968 B, and their value frames), and on
// a translating adapter's path they grew the request's goroutine past 8
// KiB, which a streaming request keeps until its stream ends
// (docs/BENCHMARKS.md, "Memory per stream"). The result is
// json.Unmarshal's, and a panic in the decode is raised again on the
// caller's goroutine.
func Decode(body []byte, cr *ChatRequest) error {
	d := decodes.Get().(*decode)
	d.body, d.cr = body, cr
	go d.run()
	<-d.done
	err, p := d.err, d.panicked
	*d = decode{done: d.done}
	decodes.Put(d)
	if p != nil {
		panic(p)
	}
	return err
}

// decode is one Decode's state, pooled with its channel.
type decode struct {
	body     []byte
	cr       *ChatRequest
	err      error
	panicked any
	done     chan struct{}
}

var decodes = sync.Pool{New: func() any { return &decode{done: make(chan struct{}, 1)} }}

func (d *decode) run() {
	defer func() {
		if p := recover(); p != nil {
			d.panicked = p
		}
		d.done <- struct{}{}
	}()
	d.err = json.Unmarshal(d.body, d.cr)
}
