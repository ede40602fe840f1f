// Package tracing puts every request the router serves into its
// client's trace (docs/ARCHITECTURE.md, "Tracing"): OpenTelemetry spans
// with the GenAI semantic conventions, exported over OTLP/HTTP in
// batches. A span keeps what the router records in typed fields and is
// encoded as OTLP protobuf once, when it ends (otlp.go); one goroutine
// sends the batches (export.go), honouring the OTEL_EXPORTER_OTLP_* and
// OTEL_BSP_* variables.
//
// The span tree of one request:
//
//	client span (the application's; its traceparent and tracestate read)
//	└── chat gpt-4o-mini                 server: one per request, `{api} {model}`
//	    │   gen_ai.operation.name, gen_ai.request.model (as the client named it),
//	    │   gen_ai.provider.name, gen_ai.response.model, gen_ai.usage.* (the
//	    │   serving attempt's), http.response.status_code, error.type (the
//	    │   error answer's code; status Error for a 5xx), llmrouter.attempt
//	    │   (attempts made), llmrouter.degraded, .hedge, llmrouter.key
//	    │   events: llmrouter.refused {reason, provider, wait_ms}
//	    │           llmrouter.backoff {wait_ms}
//	    ├── chat gpt-4o-mini-2024-07-18  client: attempt 1, `{op} {provider model}`
//	    │       gen_ai.operation.name, .provider.name (the provider's type),
//	    │       .request.model; llmrouter.provider, .tier, .attempt (its
//	    │       number), .degraded, .hedge, .key; http.response.status_code;
//	    │       error.type = the outcome kind (overloaded), status Error
//	    └── chat claude-haiku-4-5        client: attempt 2, served
//	            gen_ai.response.model, gen_ai.usage.input_tokens,
//	            .output_tokens; a stream's event gen_ai.first_token; the
//	            provider received this span's traceparent
//
// Model: a nil *Tracer is tracing off (tracing.otlp_endpoint ""): no
// exporter, no goroutine, and the zero Request and Attempt it hands out do
// nothing and allocate nothing, so the request path costs what it cost
// before. On, Start continues the client's W3C trace context (a sampled
// client trace is always kept, parent-based; new traces are kept at
// sample_ratio, by the OpenTelemetry SDK's TraceIDRatioBased rule), each
// attempt's span is the context that carries it to the adapter, and
// Inject writes that span's traceparent on the provider's request.
//
// Invariants:
//   - A span is exported at most once and at most QueueSize sampled spans
//     wait between their end and their batch's export: a span past that is
//     dropped and counted (llmrouter_tracing_spans_dropped_total
//     {reason="queue_full"}), as is a batch the collector did not take
//     ({reason="export_failed"}). A collector that is slow or down costs
//     dropped spans, never a request's time: nothing on the request path
//     waits on the exporter.
//   - A span's attributes are fixed, its events at most 32 and its string
//     values at most 512 bytes of valid UTF-8: one span's size is bounded,
//     so QueueSize bounds the exporter's memory.
//   - A span ends once: a second End does nothing.
//   - Shutdown exports what is queued within its context and stops the
//     exporter's goroutine; it runs after the drain (docs/ARCHITECTURE.md,
//     "Reload and shutdown").
package tracing
