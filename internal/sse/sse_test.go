package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ name, data string }

func readAll(t testing.TB, r io.Reader) ([]ev, error) {
	t.Helper()
	sr := NewReader(r)
	var got []ev
	for {
		e, err := sr.Next()
		if err != nil {
			return got, err
		}
		got = append(got, ev{string(e.Name), string(e.Data)})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []ev
		wantErr error
	}{
		{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"a":1}`}, {"", "[DONE]"}}, io.EOF},
		{"crlf", "data: x\r\n\r\n", []ev{{"", "x"}}, io.EOF},
		{"named", "event: message_start\ndata: {}\n\n", []ev{{"message_start", "{}"}}, io.EOF},
		{"multiline data", "data: a\ndata: b\n\n", []ev{{"", "a\nb"}}, io.EOF},
		{"comments and blanks", ": ping\n\n\n: x\ndata: y\n\n", []ev{{"", "y"}}, io.EOF},
		{"no space after colon", "data:z\n\n", []ev{{"", "z"}}, io.EOF},
		{"unknown fields ignored", "id: 1\nretry: 5\ndata: q\n\n", []ev{{"", "q"}}, io.EOF},
		{"cut mid event", "data: a\n\ndata: b\n", []ev{{"", "a"}}, io.ErrUnexpectedEOF},
		{"cut without newline", "data: a\n\ndata: b", []ev{{"", "a"}}, io.ErrUnexpectedEOF},
		{"empty", "", nil, io.EOF},
		// A bare CR ends a line, as the SSE specification reads it and a
		// client will (issue 31, finding 4): it cannot hide a line inside
		// another.
		{"bare cr ends a line", "data: a\rdata: b\r\rdata: c\n\n", []ev{{"", "a\nb"}, {"", "c"}}, io.EOF},
		{"bare cr inside json", "data: {\"type\":\"x\",\r\"a\":1}\n\n", []ev{{"", `{"type":"x",`}}, io.EOF},
		{"cr injects a named event", "event: ping\rdata: {}\r\revent: message_stop\ndata: {}\n\n",
			[]ev{{"ping", "{}"}, {"message_stop", "{}"}}, io.EOF},
		{"cr cr lf is a line and a blank line", "data:x\r\r\ndata:y\n\n", []ev{{"", "x"}, {"", "y"}}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(t, r)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("event %d = %q, want %q", i, got[i], tt.want[i])
					}
				}
			}
		})
	}
}

func TestReaderLongLineAndLimit(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	got, err := readAll(t, strings.NewReader("data: "+long+"\n\n"))
	if err != io.EOF || len(got) != 1 || got[0].data != long {
		t.Fatalf("long line: err %v, %d events", err, len(got))
	}
	r := NewReader(strings.NewReader("data: " + long + "\n\n"))
	r.max = 1000
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
}

func TestAppendData(t *testing.T) {
	if got := string(AppendData(nil, []byte(`{"a":1}`))); got != "data: {\"a\":1}\n\n" {
		t.Errorf("got %q", got)
	}
	// A payload's line breaks, CRLF, LF and bare CRs (issue 31, finding 4:
	// a bare CR was written inside a data line, where a client ends the
	// line), each end a data line, so it round-trips through a Reader.
	tests := []struct{ in, framed, back string }{
		{"{\n  \"a\": 1\r\n}", "data: {\ndata:   \"a\": 1\ndata: }\n\n", "{\n  \"a\": 1\n}"},
		{"{\"type\":\"x\",\r\"a\":1}", "data: {\"type\":\"x\",\ndata: \"a\":1}\n\n", "{\"type\":\"x\",\n\"a\":1}"},
		{"{\r\r\n}", "data: {\ndata: \ndata: }\n\n", "{\n\n}"},
		{"{}\r", "data: {}\ndata: \n\n", "{}\n"},
	}
	for _, tt := range tests {
		framed := AppendData(nil, []byte(tt.in))
		if string(framed) != tt.framed {
			t.Errorf("%q framed as %q, want %q", tt.in, framed, tt.framed)
		}
		e, err := NewReader(bytes.NewReader(framed)).Next()
		if err != nil || string(e.Data) != tt.back {
			t.Errorf("framed %q read back as %q, %v, want %q", framed, e.Data, err, tt.back)
		}
	}
}

func TestPending(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n\ndata: b\n\ndata: c"))
	if r.Pending() {
		t.Error("pending before anything was read")
	}
	if e, _ := r.Next(); string(e.Data) != "a" {
		t.Fatalf("first event %q", e.Data)
	}
	if !r.Pending() {
		t.Error("a whole event is buffered but Pending is false")
	}
	r.Next()
	if r.Pending() {
		t.Error("only half an event is buffered but Pending is true")
	}
}

// segments is a source that gives one segment a read, as a connection
// gives what has arrived.
type segments []string

func (s *segments) Read(p []byte) (int, error) {
	if len(*s) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*s)[0])
	if (*s)[0] = (*s)[0][n:]; (*s)[0] == "" {
		*s = (*s)[1:]
	}
	return n, nil
}

// TestBufferBetweenEvents: a Reader holds its buffer only while it holds
// bytes: once an event is read and nothing more has arrived, the wait for
// the next one holds none; bytes that arrived behind an event keep it.
func TestBufferBetweenEvents(t *testing.T) {
	src := segments{"data: a\n\n", "data: b\r\n\r\n", "data: c\r\r\n", "data: d\n\ndata: e\n\n", "da", "ta: f\n", "\n", ": ping\n\nevent: g\n\n"}
	r := NewReader(&src)
	for _, tt := range []struct {
		want string
		held bool // the buffer is held once the event is read
	}{{"a", false}, {"b", false}, {"c", false}, {"d", true}, {"e", false}, {"f", false}, {"", false}} {
		e, err := r.Next()
		if err != nil || string(e.Data) != tt.want {
			t.Fatalf("read %q %v, want %q", e.Data, err, tt.want)
		}
		if held := r.br != nil; held != tt.held {
			t.Errorf("after %q: buffer held %v, want %v", tt.want, held, tt.held)
		}
	}
	if string(r.name) != "g" {
		t.Errorf("last event named %q, want g", r.name)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("at the end: %v, want EOF", err)
	}
}
