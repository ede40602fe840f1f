// Package openai is the adapter for the OpenAI API family: OpenAI itself
// (api.openai.com), Azure OpenAI and OpenAI-compatible servers (Ollama,
// vLLM, llama.cpp, Groq, ...). One Adapter serves one provider; its Flavor
// decides only the URL, the auth header and the health probe:
//
//	flavor      request URL                                              auth
//	OpenAI      {base_url}{op}              (base_url ends in /v1)       Authorization: Bearer key
//	Compatible  {base_url}{op}              (base_url ends in /v1)       Authorization: Bearer key, none when key is ""
//	Azure       {base_url}/openai/deployments/{model}{op}?api-version=V  api-key: key
//	Azure v1    {base_url}/openai/v1{op}    (api_version: v1)            api-key: key
//
// where {op} is /chat/completions, /completions or /embeddings and {model}
// is the target's model name (the Azure deployment). The native Responses
// API (provider.OpResponses, OpenAI and Azure only) is {base_url}/responses
// for OpenAI and {base_url}/openai/v1/responses for Azure whatever its
// api_version (Azure has it on the v1 API), the model in the body; its
// stream is the Responses API's events (events.go), ended by the terminal
// event rather than [DONE]; FetchResponse reaches the provider's own
// stored responses below that URL.
//
// Invariants:
//   - Bodies pass through unchanged except the model value, which becomes
//     the target's model, and an output limit above the target's cap,
//     which becomes the cap (provider.Request.AppendBody). Neither the request
//     nor a non-stream answer is decoded into structs; gjson reads the few
//     fields the router needs (usage, error fields) from the raw bytes, and
//     the answer's bytes reach the proxy exactly as the provider sent them.
//   - Every failure Do, Probe or a Stream returns carries exactly one
//     *outcome.Error, classified here and nowhere else
//     (docs/ARCHITECTURE.md, "Classification"): transport failures by
//     provider.TransportError, HTTP errors and in-stream error events by
//     ClassifyError.
//   - A stream ends with io.EOF only after the provider's "data: [DONE]".
//     A body that ends without it is a cut (outcome.Network), never a
//     whole answer, and no stream error ever wraps io.EOF.
//   - Rate-limit headers never invent a shortage: a limit of 0 or -1 (the
//     Azure quirk) is unknown, and a remaining count of 0 means "no
//     capacity" only next to a positive limit (ParseRateLimit).
//   - Time enters as an argument (ClassifyError, ParseRateLimit); the
//     Adapter reads its clock through one field whose nil value is
//     time.Now.
//
// Request bodies come from a pool. The HTTP transport may read and close a
// body after Do returns and may replay it on a fresh connection (GetBody),
// so a buffer returns to the pool only when Do and every reader handed to
// the transport are done with it (see body.go).
package openai
