package h1server

import (
	"net/url"
	"strings"
	"testing"
)

// checkRequestURI fails t unless parseRequestURI gives for uri exactly
// what url.ParseRequestURI gives (every field), or both refuse it.
func checkRequestURI(t testing.TB, uri string) {
	t.Helper()
	want, werr := url.ParseRequestURI(uri)
	var got url.URL
	gerr := parseRequestURI(uri, &got)
	if (gerr != nil) != (werr != nil) {
		t.Fatalf("parseRequestURI(%q): got error %v, want %v", uri, gerr, werr)
	}
	if werr != nil {
		return
	}
	// Userinfo is a pointer: compared by what it holds, the rest field
	// for field.
	if (got.User == nil) != (want.User == nil) || got.User.String() != want.User.String() {
		t.Fatalf("parseRequestURI(%q): got user %v, want %v", uri, got.User, want.User)
	}
	g, w := got, *want
	g.User, w.User = nil, nil
	if g != w {
		t.Fatalf("parseRequestURI(%q): got %#v, want %#v", uri, got, *want)
	}
}

// TestParseRequestURI: the in-place split of a plain origin-form URI is
// url.ParseRequestURI's result, field for field, and every byte in the
// path's and the query's places takes the same way.
func TestParseRequestURI(t *testing.T) {
	for _, uri := range []string{
		"/v1/chat/completions", "/", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
		"/a?", "/a??", "/a?b?", "/?", "?", "", "*", "//host/path", "///x", "A://@", "http://u:p@h/x", "/a%20b", "/a%zz", "/a b",
		"http://host/x", "a/b", "/caf\u00e9", "/a#frag", "/a?q=%zz", "/a;b=c,d@e$f&g+h~i",
	} {
		checkRequestURI(t, uri)
	}
	for c := range 256 {
		for _, f := range []string{"/%c", "/a%cb", "/a?%c", "/a?q%c=1", "%c/a"} {
			checkRequestURI(t, strings.Replace(f, "%c", string([]byte{byte(c)}), 1))
		}
	}
}

// TestParseRequestURIAllocations: the plain URI is split without
// allocating (the URL lives in the request's exchange).
func TestParseRequestURIAllocations(t *testing.T) {
	var u url.URL
	if n := testing.AllocsPerRun(100, func() { _ = parseRequestURI("/v1/chat/completions?x=1", &u) }); n != 0 {
		t.Errorf("got %v allocations, want 0", n)
	}
}

func FuzzRequestURI(f *testing.F) {
	for _, s := range []string{"/v1/chat/completions", "/a?", "/a%20b?x=1", "//h/p", "*", "http://h/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) { checkRequestURI(t, uri) })
}
