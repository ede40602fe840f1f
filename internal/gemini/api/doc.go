// Package api is the Gemini API's dialect on the front door
// (docs/ARCHITECTURE.md, "Gemini API", "Front doors"): POST
// /v1beta/models/{model}:generateContent, :streamGenerateContent (one
// JSON array, or server-sent events with alt=sse) and :countTokens (the
// same under /v1/ for clients that ask for it), GET /v1beta/models and
// /v1beta/models/{model} (the models the client's key may call), and the
// router's own errors in Google's shape ({"error":{"code","message",
// "status"}}, status words such as INVALID_ARGUMENT and
// RESOURCE_EXHAUSTED). The client's key comes as x-goog-api-key or ?key=
// (internal/clientauth); it is never logged (the log line has the path
// alone) and never forwarded.
//
// A request is checked before any provider sees it (the types Google
// gives the fields the router reads; maxOutputTokens an integer from 1
// to 2^31), then takes the chat path's steps unchanged (client keys,
// budgets, shedding, ranking, affinity, failover before the commit point,
// the one answer writer). Each target gets it its own way:
//
//	gemini, vertex (Google's models) ── OpGemini: the client's body, the
//	                                    target's model in the URL; answer,
//	                                    events and error bodies passed back
//	                                    as they came
//	any other target ────────────────── OpChat: translated (contents,
//	                                    systemInstruction, function
//	                                    declarations, calls and responses,
//	                                    inline images, generationConfig and
//	                                    structured output); the answer and
//	                                    the stream translated back, usage
//	                                    as usageMetadata
//
// What chat completions cannot carry (safetySettings, thinkingConfig,
// cachedContent, topK, thought parts, built-in tools) is dropped. After
// the commit point a failure is one last {"error":{…}} element: a data
// event, or the array's last element before its "]".
package api
