package api

import (
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/intake"
)

// msgCreate is the one client message type of the Responses API over
// WebSocket.
const msgCreate = "response.create"

// decodeMessage reads one client message of the Responses API over
// WebSocket (docs/ARCHITECTURE.md, "Responses API over WebSocket"): a
// response.create, whose other fields are a POST /v1/responses body. It
// returns that body (type and generate taken out, stream set: the
// message is answered with the stream's events), and warmUp when the
// message says generate: false (a warm-up, answered without a provider).
// msg is not changed; body never views it. An error is the message's
// answer, in the API's shape.
func decodeMessage(msg []byte) (body []byte, warmUp bool, aerr *apierror.Error) {
	// The body check first (well-formed, nesting, one object): nothing
	// below walks a message it has not passed.
	if aerr := intake.Check(msg); aerr != nil {
		return nil, false, aerr
	}
	f := gjson.GetManyBytes(msg, "type", "generate", "stream")
	switch typ := f[0]; {
	case !typ.Exists():
		return nil, false, apierror.BadRequest("type", "the message has no type: send {\"type\":\"response.create\", …} with the fields of a POST /v1/responses body")
	case typ.Type != gjson.String || typ.Str != msgCreate:
		return nil, false, apierror.BadRequest("type", "unsupported message type "+apierror.Quote(typ.String())+
			": the Responses API over WebSocket takes response.create")
	}
	switch g := f[1]; {
	case !g.Exists() || g.Type == gjson.True:
	case g.Type == gjson.False:
		warmUp = true
	default:
		return nil, false, &apierror.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_type", Param: "generate",
			Message: "generate must be a boolean"}
	}
	var err error
	if body, err = sjson.DeleteBytes(msg, "type"); err == nil && f[1].Exists() {
		body, err = sjson.DeleteBytes(body, "generate")
	}
	if err == nil && f[2].Type != gjson.True {
		body, err = sjson.SetRawBytes(body, "stream", []byte("true"))
	}
	if err != nil {
		// Cannot happen on a body intake.Check passed; said, not hidden.
		return nil, false, apierror.BadRequest("", "the message could not be read: "+err.Error())
	}
	return body, warmUp, nil
}
