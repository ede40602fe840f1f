package jsonscan

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// A checked walk is the bounded check and a reader's walk in one pass
// (docs/ARCHITECTURE.md, "Hostile clients"): the walker checks the
// structure it walks (commas, colons, keys, brackets, the top level's
// keys and what follows the document) and Skip checks the values it
// steps over with Check's own machine (value), so a walk that ends well
// has read text Check accepts, and a reader that walks every byte of a
// body needs no check before it.

// Doc is the checked walk of a whole document (Start): the walker of its
// top-level object's members (its array's elements), which also keeps
// the object's keys, to refuse a repeated one and more than
// MaxTopLevelKeys as Check does. Its keys are kept in the Doc itself,
// not behind a pointer in its Walker, so a Doc lives on its caller's
// frame; walk the document with Doc's Member and hand &Doc.Walker to
// whatever walks a value of it (Walker.Walk).
type Doc struct {
	Walker
	small [smallKeys]span
	n     int
	more  []span // every key, once they are more than smallKeys
}

// Start begins the checked walk of the document s. A document that is
// not an object or an array has nothing to walk: the walk is done, its At
// -1.
func (d *Doc) Start(s string) {
	d.n, d.more = 0, nil
	i := ws(s, 0)
	if i < len(s) && (s[i] == '{' || s[i] == '[') {
		d.Walker = Walker{s: s, i: i + 1, obj: s[i] == '{', checked: true, depth: 1}
		return
	}
	d.Walker = Walker{s: s, i: -1, done: true}
}

// Member is Walker's Member that keeps the top-level keys of a checked
// walk: at the end of the object a repeated one ends the walk as the
// text ending would.
func (d *Doc) Member() bool {
	if !d.checked || !d.obj {
		return d.Walker.Member()
	}
	if d.Walker.Member() {
		switch {
		case d.n == MaxTopLevelKeys:
			return d.fail()
		case d.n < smallKeys:
			d.small[d.n] = d.kspan
		case d.n == smallKeys:
			d.more = append(append(make([]span, 0, 4*smallKeys), d.small[:]...), d.kspan)
		default:
			d.more = append(d.more, d.kspan)
		}
		d.n++
		return true
	}
	keys := d.more
	if d.n <= smallKeys {
		keys = d.small[:d.n]
	}
	if d.i >= 0 && duplicates(bytesOf(d.s), keys) != nil {
		d.fail()
	}
	return false
}

// Walk returns the walker of the current value, checked when w is (one
// level deeper): an object's members, an array's elements, nothing for
// any other value (its At just past it). The caller Resumes w at the
// walker's At once it is done.
func (w *Walker) Walk() Walker {
	if !w.checked {
		return Walk(w.s, w.i)
	}
	i := w.i
	if i < 0 || i >= len(w.s) {
		return Walker{s: w.s, i: -1, done: true}
	}
	if c := w.s[i]; c == '{' || c == '[' {
		if w.depth == MaxDepth {
			return Walker{s: w.s, i: -1, done: true}
		}
		return Walker{s: w.s, i: i + 1, obj: c == '{', checked: true, depth: w.depth + 1}
	}
	end, _, err := value(bytesOf(w.s), i, w.depth, nil, false)
	if err != nil {
		end = -1
	}
	return Walker{s: w.s, i: end, done: true}
}

// member is Member of a checked walker.
func (w *Walker) member() bool {
	s := w.s
	i := ws(s, w.i)
	if i >= len(s) {
		return w.fail()
	}
	switch c := s[i]; {
	case c == '}' || c == ']':
		if (c == '}') != w.obj {
			return w.fail()
		}
		w.i, w.done = i+1, true
		if w.depth == 1 && ws(s, i+1) != len(s) {
			return w.fail() // more after the document
		}
		return false
	case w.n > 0:
		if c != ',' {
			return w.fail()
		}
		if i = ws(s, i+1); i >= len(s) {
			return w.fail()
		}
	}
	w.n++
	if !w.obj {
		if c := s[i]; c == '}' || c == ']' {
			return w.fail() // [1,]
		}
		w.key, w.i = "", i
		return true
	}
	if s[i] != '"' {
		return w.fail()
	}
	end, esc, err := scanString(bytesOf(s), i)
	if err != nil {
		return w.fail()
	}
	w.key = s[i+1 : end-1]
	if esc {
		w.key = gjson.Parse(s[i:end]).Str
	}
	w.kspan = span{start: i + 1, end: end - 1, esc: esc}
	i = ws(s, end)
	if i >= len(s) || s[i] != ':' {
		return w.fail()
	}
	if w.i = ws(s, i+1); w.i >= len(s) {
		return w.fail()
	}
	return true
}

// skip is Skip of a checked walker: the value checked as Check checks it.
func (w *Walker) skip() {
	if w.i < 0 {
		w.fail()
		return
	}
	var (
		end int
		err *Error
	)
	if w.i < len(w.s) && w.s[w.i] == '"' { // most values: no machine to set up
		end, _, err = scanString(bytesOf(w.s), w.i)
	} else {
		end, _, err = value(bytesOf(w.s), w.i, w.depth, nil, false)
	}
	if err != nil {
		w.fail()
		return
	}
	w.val, w.i = w.s[w.i:end], end
}

// ws returns the index of the first byte from i on that is not JSON
// whitespace (RFC 8259: space, tab, line feed, carriage return).
func ws(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// bytesOf is s's bytes, not copied: the checker reads them, never writes.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
