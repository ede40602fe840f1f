package provider

import "github.com/llmrouter/llmrouter/internal/openaiwire"

// Minimal is the router's own smallest request of op to model: one short
// user turn, an output of one token (sixteen for the Responses API, its
// least), not a stream, nothing of any client's. The router sends it to
// confirm a kind an error's words only suspect (outcome.Error.Suspect,
// docs/ARCHITECTURE.md, "Classification").
func Minimal(op Op, model string) *Request {
	if op == OpGemini {
		// The Gemini API names the model in the URL, not the body.
		body := []byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1}}`)
		return &Request{Op: op, Model: model, Body: body}
	}
	body := []byte(`{"model":`)
	start := len(body)
	body, _ = openaiwire.Append(body, &model) // a string always encodes
	end := len(body)
	switch op {
	case OpCompletions:
		body = append(body, `,"prompt":"hi","max_tokens":1}`...)
	case OpEmbeddings:
		body = append(body, `,"input":"hi"}`...)
	case OpResponses:
		body = append(body, `,"input":"hi","max_output_tokens":16,"store":false}`...)
	case OpMessages:
		body = append(body, `,"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`...)
	default:
		body = append(body, `,"messages":[{"role":"user","content":"hi"}],"max_tokens":1}`...)
	}
	return &Request{Op: op, Model: model, Body: body, ModelStart: start, ModelEnd: end}
}
