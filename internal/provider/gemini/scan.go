package gemini

import (
	"unsafe"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
)

// A GenerateContentResponse's fields are read from its text with
// jsonscan, as gjson's Get, ForEach, Int, Bool and String read them
// (FuzzReadsAsGjson holds them to the gjson reads they replaced): gjson's
// nested ForEach closures, its Get (752 B of frame) and its float parse
// of every number (strconv's atof64, 912 B) on top of a stream's waiting
// frames grew every Gemini stream's goroutine to 16 KiB, which it keeps
// for the stream's life (docs/BENCHMARKS.md, "Memory per stream").
// Every text read is one valid JSON value (the event was checked), "" a
// value that is not there.

// event is the members of a GenerateContentResponse the adapter reads.
type event struct {
	err, usage, id, model, candidates, feedback string
}

// readEvent reads the top-level members of an event (checked JSON) in
// one walk, the first of a repeated key as gjson's Get finds it. A value
// that is not an object has no members. (gjson's Get of a string reads
// the first object it finds inside the string's text, but a key found
// there never has a value: every quote but the string's last is
// escaped.)
func readEvent(v string) (e event) {
	i := jsonscan.Space(v, 0)
	if i >= len(v) || v[i] != '{' {
		return event{}
	}
	for w := jsonscan.Walk(v, i); w.Next(); {
		var f *string
		switch w.Key() {
		case "error":
			f = &e.err
		case "usageMetadata":
			f = &e.usage
		case "responseId":
			f = &e.id
		case "modelVersion":
			f = &e.model
		case "candidates":
			f = &e.candidates
		case "promptFeedback":
			f = &e.feedback
		default:
			continue
		}
		if *f == "" {
			*f = w.Val()
		}
	}
	return e
}

// blocked reports whether the event says the prompt was blocked:
// promptFeedback.blockReason is there.
func (e *event) blocked() bool { return get(e.feedback, "blockReason") != "" }

// get is gjson's Get(v, key) for a key without path syntax: the value of
// the first member of the object v named key, "" when v is not an object
// (see readEvent).
func get(v, key string) string { return jsonscan.Fields(v, key)[0] }

// values walks what gjson's ForEach visits: an array's elements, an
// object's members' values, any other value once, nothing for "".
type values struct {
	w    jsonscan.Walker
	one  string // the value of a value that is neither array nor object
	val  string
	done bool
}

func each(v string) values {
	if v == "" || v[0] == '{' || v[0] == '[' {
		return values{w: jsonscan.Walk(v, 0)}
	}
	return values{one: v}
}

// next moves to the next value (Val); false at the end.
func (e *values) next() bool {
	if e.one != "" {
		e.val, e.one, e.done = e.one, "", true
		return true
	}
	if e.done || !e.w.Next() {
		e.done = true
		return false
	}
	e.val = e.w.Val()
	return true
}

// unsafeString views b as a string without copying: b must not change
// while the string is used (an event's data, read before the next).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
