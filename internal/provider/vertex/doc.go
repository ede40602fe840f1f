// Package vertex is the adapter for Google Vertex AI, one project and
// location per provider (docs/ARCHITECTURE.md, "Providers"). Anthropic's
// models (a model name starting with "claude") take the Messages body
// through rawPredict; every other model is Google's and takes
// generateContent.
//
// Model:
//
//	Messages request (OpMessages, Claude)
//	  ──anthropic.InvokeBody: model out, anthropic_version in, stream kept; anthropic-beta header──►
//	  POST …/publishers/anthropic/models/{m}:rawPredict | :streamRawPredict
//	  message JSON, SSE event payloads ◄──as received──┘
//
//	OpenAI chat (OpChat, Claude)
//	  ──anthropic.TranslateChat, then InvokeBody──► the same two calls
//	  OpenAI JSON and chunks ◄──the anthropic package's translation──┘
//
//	Gemini API request (OpGemini, Gemini)
//	  ──gemini.NativeBody: the client's body (output cap, thought-signature sentinel)──►
//	  POST …/publishers/google/models/{m}:generateContent | :streamGenerateContent?alt=sse
//	  GenerateContentResponse, SSE event payloads ◄──as received──┘
//
//	OpenAI chat (OpChat, Gemini)
//	  ──gemini.TranslateChat──► POST …/publishers/google/models/{m}:generateContent
//	                                                   | :streamGenerateContent?alt=sse
//	  OpenAI JSON and chunks ◄──the gemini package's translation──┘
//
// Requests carry an OAuth2 access token (Authorization: Bearer) from
// Google's Application Default Credentials, found by
// cloud.google.com/go/auth/credentials on the first request and not in
// New, which does no I/O: GOOGLE_APPLICATION_CREDENTIALS (a service-account
// key, or a workload identity federation config), gcloud's application
// default credentials file, the metadata server (GKE workload identity,
// Cloud Run, Compute Engine). The token is cached and fetched again when it
// comes within 3 min 45 s of its expiry, by the request that finds it so.
//
// Invariants:
//   - A token that cannot be had is the auth kind for the provider, bounded
//     by the attempt's context: never a crash or a hang.
//   - Every failure is classified here, once (ClassifyError): Google's
//     error shape as the gemini package reads it, Anthropic's (which
//     rawPredict passes on) as the anthropic package does, its body kept
//     for a Messages client; a cut stream by provider.TransportError.
//   - The Messages body is the client's, member for member and each value
//     byte for byte, without model (the URL names it), with
//     anthropic_version "vertex-2023-10-16" unless the body has one; the
//     client's anthropic-beta goes on as the same header, where Vertex
//     reads betas (Bedrock reads them in the body).
//   - Vertex AI sends no rate-limit headers: answers carry
//     outcome.UnknownRateLimit; a 429's wait is its RetryInfo, if any.
//   - The probe (one endpoint of the location) spends no tokens.
package vertex
