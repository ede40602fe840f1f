package affinity

import "bytes"

// A minimal reader of JSON that has been validated already (jsoncheck):
// it finds the extent of values without decoding them, skipping strings
// with bytes.IndexByte, so hashing a conversation's opening reads little
// more than the opening. Malformed input never panics; it reads as ends.

// space returns the index of the first non-space byte at or after i.
func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skip returns the index just past the value that starts at b[i], always
// past i when i is within b.
func skip(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	start := i
	for i < len(b) && b[i] != ',' && b[i] != ']' && b[i] != '}' && b[i] > ' ' {
		i++ // a number, true, false or null
	}
	if i == start {
		return i + 1 // not a value (malformed input): step over it, never stay
	}
	return i
}

// skipString returns the index just past the string that starts at b[i].
func skipString(b []byte, i int) int {
	start := i
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		n := 0 // backslashes before the quote: an odd count escapes it
		for k := i - 1; k > start && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// fields returns the raw values of keys a and b (quotes included in the
// keys: `"role"`) of the object that starts at o[i], the first of a
// repeated key, nil when absent, and the index just past the object. A
// value that is not an object has neither.
func fields(o []byte, i int, a, b string) (va, vb []byte, end int) {
	if i >= len(o) || o[i] != '{' {
		return nil, nil, skip(o, i)
	}
	i++
	for {
		i = space(o, i)
		if i >= len(o) {
			return va, vb, len(o)
		}
		switch o[i] {
		case '}':
			return va, vb, i + 1
		case ',':
			i++
			continue
		}
		ke := skipString(o, i)
		key := o[i:ke]
		i = space(o, ke)
		if i < len(o) && o[i] == ':' {
			i = space(o, i+1)
		}
		ve := skip(o, i)
		switch {
		case va == nil && string(key) == a:
			va = o[i:ve]
		case vb == nil && string(key) == b:
			vb = o[i:ve]
		}
		i = ve
	}
}

// elements calls f with the index of each element of the array that
// starts at b[i], until f returns the index past the element it read or
// -1 to stop.
func elements(b []byte, i int, f func(at int) int) {
	if i >= len(b) || b[i] != '[' {
		return
	}
	i++
	for {
		i = space(b, i)
		if i >= len(b) || b[i] == ']' {
			return
		}
		if b[i] == ',' {
			i++
			continue
		}
		if i = f(i); i < 0 {
			return
		}
	}
}
