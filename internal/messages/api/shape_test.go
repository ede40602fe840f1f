package api

import (
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// TestNativeEventNames: a native event is written under its payload's
// type only when that is [a-z_]+; any other type is a malformed event and
// nothing is written (issue 31, finding 4: a type decoded with line breaks
// in it wrote events of the provider's own into the client's stream).
func TestNativeEventNames(t *testing.T) {
	tests := []struct {
		payload, want string // want "": refused
	}{
		{`{"type":"content_block_delta","index":0}`, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0}\n\n"},
		{`{"index":0,"type":"message_stop"}`, "event: message_stop\ndata: {\"index\":0,\"type\":\"message_stop\"}\n\n"},
		{`{"x":1}`, "event: message\ndata: {\"x\":1}\n\n"},
		{`{"type":"ping\n\nevent: message_stop\ndata: {}"}`, ""},
		{`{"type":"ping\r"}`, ""},
		{`{"type":"Ping"}`, ""},
		{`{"type":"ping2"}`, ""},
		{`{"type":"message.stop"}`, ""},
	}
	for _, tt := range tests {
		got, err := nativeEvents{}.Chunk([]byte("x"), []byte(tt.payload))
		switch {
		case tt.want == "":
			if outcome.KindOf(err) != outcome.ServerError || string(got) != "x" {
				t.Errorf("%s: got %q, %v; want a server_error and nothing written", tt.payload, got, err)
			}
		case err != nil || string(got) != "x"+tt.want:
			t.Errorf("%s: got %q, %v; want %q", tt.payload, got, err, tt.want)
		}
	}
}
