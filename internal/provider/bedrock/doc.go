// Package bedrock is the adapter for Amazon Bedrock's runtime API, one
// region per provider (docs/ARCHITECTURE.md, "Providers"). Anthropic's
// models (a model id holding "anthropic.": a foundation model, an
// inference profile such as us.anthropic.…, or an ARN naming one) take the
// Messages body through InvokeModel; every other model takes Converse.
//
// Model:
//
//	Messages request (OpMessages, Anthropic models)
//	  ──anthropic.InvokeBody: model out, anthropic_version and anthropic_beta in──►
//	  POST /model/{id}/invoke | /invoke-with-response-stream
//	  message JSON   ◄──as received──────────────────────────┘
//	  event payloads ◄──each chunk frame's bytes, base64-decoded─┘
//
//	OpenAI chat (OpChat, Anthropic models)
//	  ──anthropic.TranslateChat, then InvokeBody──► the same two calls
//	  OpenAI JSON and chunks ◄──the anthropic package's translation──┘
//
//	OpenAI chat (OpChat, other models)
//	  ──translateConverse──► POST /model/{id}/converse | /converse-stream
//	  OpenAI JSON   ◄──convertConverse──┘
//	  OpenAI chunks ◄──converseStream: event-stream frames──┘
//
// Every request is signed with SigV4 (aws/signer/v4) by credentials from
// the AWS SDK for Go's default chain (config.LoadDefaultConfig:
// environment keys, the shared config and credentials files and their
// profile, web identity as EKS IRSA sets it up, the ECS task role, the EC2
// instance role), loaded on the first request and not in New, which does
// no I/O, and cached by aws.CredentialsCache, which refreshes them five
// minutes (less jitter) before they expire. Streams are AWS event-stream
// frames, decoded by the SDK's aws/protocol/eventstream, which checks
// every frame's CRCs.
//
// Invariants:
//   - A credential that cannot be had (no source, a web identity token STS
//     refuses, a profile that does not exist) is the auth kind for the
//     provider, bounded by the attempt's context: never a crash or a hang.
//     The chain is looked for again on the next request.
//   - Every failure is classified here, once: an HTTP error by
//     ClassifyError (x-amzn-ErrorType first, the message where Bedrock
//     reuses a code for a missing target, the status last); an exception
//     frame in a stream by its :exception-type; a body that ends before
//     the answer's finish (messageStop; message_delta's stop reason inside
//     an invoke stream) or a damaged frame by provider.TransportError
//     (outcome.Network). A body that ends cleanly after the finish is a
//     whole answer, its usage event or message_stop after it or not
//     (docs/ARCHITECTURE.md, "Streaming").
//   - The Messages body is the client's, member for member and each value
//     byte for byte, without model (the URL names it) and stream (the
//     endpoint says it), with anthropic_version "bedrock-2023-05-31" and
//     the client's anthropic-beta as anthropic_beta, unless the body has
//     them. Bedrock's error bodies are AWS's, not Anthropic's: they are not
//     passed on as they came; the front door words them from the kind.
//   - Bedrock sends no rate-limit headers: answers carry
//     outcome.UnknownRateLimit, and a ThrottlingException without a
//     Retry-After counts towards the breaker as any hintless 429 does.
//   - The probe (ListFoundationModels on the control plane) spends no
//     tokens; an AccessDeniedException there is healthy (who signed is
//     checked before what they may do).
package bedrock
