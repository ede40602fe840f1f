// Package api serves the Responses API's routes (docs/ARCHITECTURE.md,
// "Responses API", "HTTP surface"): POST /v1/responses, and GET and DELETE
// /v1/responses/{id}, its input_items and its cancel, over the stored
// responses it keeps; and GET /v1/responses upgraded to the Responses API
// over WebSocket (websocket.go), whose response.create messages each take
// the POST's path and are answered with its events as text messages.
//
// It is a handler on the front door, not a second one: each request goes
// through internal/proxy's Request (client authentication, the body within
// the limits, the request's routing state, its exchange), takes the chat
// path's attempt loop through Request.Dispatch and is answered once by the
// answer writer (internal/answer). What it adds is the Responses API's: the
// request decoded (internal/responses), the turn with the conversation it
// continues (internal/responses/turn), translated onto chat completions
// (internal/responses/chat) or sent natively (internal/responses/native),
// the provider's answer reshaped into a Response before the commit point
// or its stream into Responses events, and the store
// (internal/responses/store) read, written and forwarded to the provider
// that runs a background response.
package api
