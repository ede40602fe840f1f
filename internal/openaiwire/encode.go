package openaiwire

import (
	"encoding/json"
	"sync"
)

// Append appends v's JSON to dst as one line, the way every OpenAI answer
// in this module is written: no trailing newline, and <, > and & kept as
// they are (json.Marshal escapes them for HTML, which OpenAI does not).
// On error dst is returned unchanged. A pointer v costs no allocation
// (a string or struct passed by value is copied to the heap to become an
// any). A caller that encodes many values in a row keeps an Encoder.
func Append(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*Encoder)
	defer encoders.Put(e)
	return e.Append(dst, v)
}

// encoders holds Append's Encoders between calls.
var encoders = sync.Pool{New: func() any { return new(Encoder) }}

// Encoder is Append with its encoding/json state kept between calls: a
// stream that writes one chunk per upstream event holds one for its life,
// so that a chunk costs no allocation of the encoder's own. The zero value
// is ready to use; an Encoder must not be copied after first use and is
// for one goroutine at a time.
type Encoder struct {
	w   sliceWriter
	enc *json.Encoder // writes into w
}

// Append appends v's JSON to dst as the package-level Append does.
func (e *Encoder) Append(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case *ChatCompletionChunk:
		if out, ok := appendChunk(dst, v); ok {
			return out, nil
		}
	case *string: // a model name swapped into every request body
		return appendString(dst, *v), nil
	}
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.w)
		e.enc.SetEscapeHTML(false)
	}
	// Encode writes to w only once v encoded whole, so on error w.b is
	// still dst.
	e.w.b = dst
	err := e.enc.Encode(v)
	out := e.w.b
	e.w.b = nil // do not keep the caller's buffer alive
	if err != nil {
		return dst, err
	}
	return out[:len(out)-1], nil // Encode ends the value with '\n'
}

// sliceWriter is an io.Writer appending to b.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
