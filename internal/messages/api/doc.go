// Package api is the Anthropic Messages API's dialect on the front door
// (docs/ARCHITECTURE.md, "Anthropic Messages API", "Front doors"): POST
// /v1/messages (plain and streamed, any query string ignored), POST
// /v1/messages/count_tokens, the models list in Anthropic's shape for a
// request that carries anthropic-version, and the router's own errors in
// Anthropic's shape.
//
// A request is checked as Anthropic checks it (internal/messages) before
// any provider sees it, then takes the chat path's steps unchanged
// (client keys, shedding, ranking, admission, failover before the commit
// point, the one answer writer). Each target gets it its own way:
//
//	Anthropic-format target ── OpMessages: the client's body, only the
//	                            model swapped; anthropic-version and
//	                            anthropic-beta forwarded; answer, events
//	                            and error bodies passed back as they came
//	any other target ────────── OpChat: translated (internal/messages/chat);
//	                            the answer and the stream translated back,
//	                            pings written during silent gaps
//
// The attempt loop picks per target (provider.Request.Alt), so a model
// whose Anthropic provider is down fails over to an OpenAI one mid-request.
package api
