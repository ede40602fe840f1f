package jsonscan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// same walks the value v with a Walker and with gjson's ForEach, at
// every level, and reports the first difference: the keys (unescaped),
// the values' texts and the strings' values must be gjson's.
func same(t testing.TB, v string) {
	t.Helper()
	stack := []string{v}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if got, want := End(v, 0), len(v); got != want {
			t.Fatalf("End(%q) = %d, want %d", v, got, want)
		}
		if got, want := Unquote(v), gjson.Parse(v).Str; IsString(v) && got != want {
			t.Fatalf("Unquote(%q) = %q, gjson reads %q", v, got, want)
		}
		if r := gjson.Parse(v); AsInt(v) != r.Int() || AsBool(v) != r.Bool() || AsString(v) != r.String() {
			t.Fatalf("%q: AsInt, AsBool, AsString %d %v %q; gjson reads %d %v %q", v, AsInt(v), AsBool(v), AsString(v), r.Int(), r.Bool(), r.String())
		}
		if v[0] != '{' && v[0] != '[' {
			continue // gjson's ForEach reads a scalar as its one element
		}
		var keys, vals []string
		gjson.Parse(v).ForEach(func(k, x gjson.Result) bool {
			keys, vals = append(keys, k.Str), append(vals, x.Raw)
			return true
		})
		w := Walk(v, 0)
		n := 0
		for w.Next() {
			if n >= len(vals) || w.Key() != keys[n] || w.Val() != vals[n] {
				t.Fatalf("%q: member %d is %q: %q, gjson reads %q: %q", v, n, w.Key(), w.Val(), keys[n], vals[n])
			}
			stack = append(stack, w.Val())
			n++
		}
		if n != len(vals) || w.At() != len(v) {
			t.Fatalf("%q: %d members ending at %d, gjson reads %d", v, n, w.At(), len(vals))
		}
		if w.Object() && len(keys) > 0 {
			f := Fields(v, keys[0], keys[len(keys)-1])
			if want := gjson.Get(v, keys[0]).Raw; f[0] != want && simplePath(keys[0]) {
				t.Fatalf("Fields(%q, %q) = %q, gjson reads %q", v, keys[0], f[0], want)
			}
		}
	}
}

// simplePath reports whether k means itself as a gjson path.
func simplePath(k string) bool {
	return k != "" && !strings.ContainsAny(k, `.*?|#@\!=<>%"[]{}()`)
}

// plainRef is Plain a byte at a time.
func plainRef(s string, i int) int {
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// TestPlain: the first byte a string cannot hold as it is, found eight
// bytes at a time, is the one a byte loop finds, wherever it sits.
func TestPlain(t *testing.T) {
	specials := []byte{'"', '\\', 0x00, 0x1f, 0x7f, 0x80, 0xff, ' ', '!', '#', '[', ']', '~'}
	for n := 0; n <= 20; n++ {
		for at := 0; at <= n; at++ {
			for _, c := range specials {
				b := bytes.Repeat([]byte{'a'}, n)
				if at < n {
					b[at] = c
				}
				for from := 0; from <= n; from++ {
					if got, want := Plain(string(b), from), plainRef(string(b), from); got != want {
						t.Fatalf("Plain(%q, %d) = %d, want %d", b, from, got, want)
					}
				}
			}
		}
	}
}

// TestWalk: a walk reads every member and element as gjson does, at
// every level; a walk of text that is not JSON ends without reading out
// of bounds.
func TestWalk(t *testing.T) {
	for _, v := range []string{
		`{"a":1,"b":[true,false,null],"c":{"d":"e\"f"},"a":2}`,
		` [ 1 , "x" , { } , [ ] , -0.5e10 ] `,
		`{"mod\u0065l":"m","k\\":"\ud83d\ude00"}`,
		`"plain"`, `12`, `null`, `[]`, `{}`,
	} {
		same(t, strings.TrimSpace(v))
	}
	for _, v := range []string{`{"a":`, `{"a"`, `{"a":"b`, `[1,`, `{1:2}`, `{"a":1 "b":2}`, `"\`, `[`, ``} {
		w := Walk(v, 0)
		for w.Next() {
		}
		_ = End(v, 0)
	}
}

// FuzzScan: for any input, Plain is a byte loop's answer, String ends
// where a byte loop ends, and nothing panics; for valid JSON, End is the
// value's end and a walk reads every level as gjson does (keys, texts,
// strings' values): the same values as gjson for any input.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi \"there\"\n"}]}]}`,
		`{"a":"\u00e9\ud800x","b":[1,2,{"c":null}],"b":3}`, `[{"k\\":"v"},"\\",-1.5e-3]`, `"\ud83d\ude00"`,
		`{"a":1,}`, `[01]`, "{\"a\":\"\xff\"}", `{"a" 1}`, `[[[[`, `]`, ``, `{} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		s := string(doc)
		for i := range min(len(s), 64) {
			if got, want := Plain(s, i), plainRef(s, i); got != want {
				t.Fatalf("Plain(%q, %d) = %d, want %d", s, i, got, want)
			}
		}
		if len(s) > 0 && s[0] == '"' {
			esc, want := false, -1
			for j := 1; j < len(s); j++ {
				if s[j] == '"' {
					want = j + 1
					break
				}
				if s[j] == '\\' {
					esc = true
					j++
				}
			}
			if got, gotEsc := String(s, 0); got != want || (want > 0 && gotEsc != esc) {
				t.Fatalf("String(%q) = %d, %v, want %d, %v", s, got, gotEsc, want, esc)
			}
		}
		sameAsCheck(t, s)
		for i := range min(len(s), 16) {
			_ = End(s, i)
			w := Walk(s, i)
			for w.Next() {
				_ = Unquote(w.Val())
			}
		}
		if !json.Valid(doc) {
			return
		}
		v := strings.TrimSpace(s)
		if got := End(s, Space(s, 0)); got != Space(s, 0)+len(v) {
			t.Fatalf("End(%q) = %d, want %d", s, got, Space(s, 0)+len(v))
		}
		same(t, v)
	})
}

// walkChecked walks every level of the document s with a checked walker,
// stepping over the values at the levels skip names (by depth) with Skip
// and into the others, and reports whether the walk ended well.
func walkChecked(s string, skip func(depth int) bool) bool {
	var d Doc
	d.Start(s)
	if d.At() < 0 {
		return false
	}
	var walk func(w *Walker, member func() bool, depth int) bool
	walk = func(w *Walker, member func() bool, depth int) bool {
		for member() {
			if c := w.First(); (c == '{' || c == '[') && !skip(depth) {
				sub := w.Walk()
				if !walk(&sub, sub.Member, depth+1) {
					return false
				}
				w.Resume(sub.At())
				continue
			}
			if skip(depth) {
				w.Skip()
			} else {
				sub := w.Walk() // a scalar's walker: checked, done
				w.Resume(sub.At())
			}
		}
		return w.At() >= 0
	}
	return walk(&d.Walker, d.Member, 1)
}

// sameAsCheck: a checked walk of s, whatever it steps over and walks
// into, ends well exactly when Check accepts s (for an object or an
// array: Checked walks nothing else).
func sameAsCheck(t testing.TB, s string) {
	t.Helper()
	if i := ws(s, 0); i >= len(s) || s[i] != '{' && s[i] != '[' {
		var d Doc
		if d.Start(s); d.Member() || d.At() >= 0 {
			t.Fatalf("Doc.Start(%q) walks a document that is not an object or an array", s)
		}
		return
	}
	want := Check([]byte(s)) == nil
	for name, skip := range map[string]func(int) bool{
		"all skipped":  func(int) bool { return true },
		"all walked":   func(int) bool { return false },
		"odd skipped":  func(d int) bool { return d%2 == 1 },
		"even skipped": func(d int) bool { return d%2 == 0 },
	} {
		if got := walkChecked(s, skip); got != want {
			t.Fatalf("%s: checked walk of %q ended well %v, Check accepts it %v", name, s, got, want)
		}
	}
}

// TestChecked: a checked walk refuses what Check refuses and nothing
// else, however it reads the document.
func TestChecked(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	many := func(n int, last string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			fmt.Fprintf(&b, `"k%d":1,`, i)
		}
		return b.String() + `"` + last + `":2}`
	}
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		" \t\r\n{ \"a\" : [ 1 , 2.5e-3 , -0 , true , false , null ] }\n ",
		`{"a":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"}`, `{"a":"héllo 日本 😀"}`,
		`{"a":{},"b":[],"c":[[],{}]}`, `{"a":{"x":1,"x":2}}`, `[1,[2,{"a":[3]}]]`, `[]`, `{}`,
		deep(MaxDepth), deepObj(MaxDepth), deep(MaxDepth + 1), deepObj(MaxDepth + 1),
		`{"model":"a","model":"b"}`, `{"model":"a","mod\u0065l":"b"}`, `[{"a":1},{"a":1}]`,
		many(31, "k3"), many(31, "z"), many(40, "k35"), many(40, "k3"), many(40, "z"), many(MaxTopLevelKeys-1, "z"), many(MaxTopLevelKeys, "z"),
		"{\"a\":\"\xff\"}", "{\"a\":1\xff}", "{\"a\":\"x\ny\"}", "{\"\xff\":1}", `{"a":"\x"}`, `{"a":"\u12g4"}`,
		`{"a":1,}`, `[1,]`, `{"a" 1}`, `{a:1}`, `{"a":1`, `{"a":"x`, `{"a":[1}`, `{} {}`, `{}]`, `[}`, `{]`,
		`[01]`, `[-]`, `[1.]`, `[1e+]`, `[tru]`, `{'a':1}`, `{"a":1 "b":2}`, `[1 2]`, `{,"a":1}`, `[,1]`, `{"a":}`, `{"a"`,
		`{"a":1}x`, `{"a":1} `, `"x"`, `12`, ``, `  `,
	} {
		sameAsCheck(t, s)
	}
}

// TestValuesAsGjson: AsInt, AsBool and AsString read a value as gjson's
// Int, Bool and String do.
func TestValuesAsGjson(t *testing.T) {
	for _, v := range []string{
		``, `0`, `-0`, `7`, `-12`, `1.5`, `1.50`, `2e2`, `1e-400`, `0.0`, `-0.0`, `1E3`,
		`9007199254740991`, `9007199254740993`, `-9007199254740993`, `99999999999999999999`, `-99999999999999999999`,
		`true`, `false`, `null`, `""`, `"7"`, `"1.5"`, `"x"`, `"true"`, `"TRUE"`, `"t"`, `"0"`, `"1"`, `"F"`,
		`"a\"b"`, `"\u0041"`, `{}`, `{"a":1}`, `[]`, `[1,2]`,
	} {
		r := gjson.Parse(v)
		if got, want := AsInt(v), r.Int(); got != want {
			t.Errorf("AsInt(%s) = %d, gjson's %d", v, got, want)
		}
		if got, want := AsBool(v), r.Bool(); got != want {
			t.Errorf("AsBool(%s) = %v, gjson's %v", v, got, want)
		}
		if got, want := AsString(v), r.String(); got != want {
			t.Errorf("AsString(%s) = %q, gjson's %q", v, got, want)
		}
	}
}
