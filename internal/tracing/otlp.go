package tracing

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP protobuf messages' field numbers this package writes
// (opentelemetry/proto trace/v1, common/v1, resource/v1 and
// collector/trace/v1). A span is encoded once, when it ends, straight
// from what the router recorded: no intermediate attribute values, no
// reflection (docs/ARCHITECTURE.md, "Tracing"). The tests decode every
// export with the official generated types.
const (
	// ExportTraceServiceRequest
	fieldResourceSpans = 1
	// ResourceSpans
	fieldResource   = 1
	fieldScopeSpans = 2
	// ScopeSpans
	fieldScope          = 1
	fieldSpans          = 2
	fieldScopeSchemaURL = 3
	// InstrumentationScope
	fieldScopeName    = 1
	fieldScopeVersion = 2
	// Resource
	fieldResourceAttrs = 1
	// Span
	fieldTraceID       = 1
	fieldSpanID        = 2
	fieldTraceState    = 3
	fieldParentSpanID  = 4
	fieldName          = 5
	fieldKind          = 6
	fieldStart         = 7
	fieldEnd           = 8
	fieldSpanAttrs     = 9
	fieldEvents        = 11
	fieldDroppedEvents = 12
	fieldStatus        = 15
	fieldFlags         = 16
	// Span.Event
	fieldEventTime  = 1
	fieldEventName  = 2
	fieldEventAttrs = 3
	// Status
	fieldStatusMessage = 2
	fieldStatusCode    = 3
	// KeyValue
	fieldKey   = 1
	fieldValue = 2
	// AnyValue
	fieldString = 1
	fieldBool   = 2
	fieldInt    = 3
	fieldDouble = 4
	// ExportTraceServiceResponse / ExportTracePartialSuccess
	fieldPartialSuccess = 1
	fieldRejectedSpans  = 1
	fieldErrorMessage   = 2
)

// maxExportedState is the longest tracestate a span is exported with: a
// longer one, valid (W3C allows 32 members of up to 512 bytes) but a
// client's to choose, is exported empty, since cutting it would make it
// invalid; the providers still get it whole (issue 31, finding 5: a 16 KB
// tracestate was copied into every span).
const maxExportedState = 512

// statusError is Status.code STATUS_CODE_ERROR.
const statusError = 2

// Span.flags: the W3C trace flags in the low byte, and whether the parent
// is known to be remote (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK) and is
// (SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK).
const (
	flagsHasIsRemote = 0x100
	flagsIsRemote    = 0x200
)

// encodeSpan appends the Span message of s (its body, without a tag),
// ended at end, with the attributes attrs appends, its events and, when
// statusErr, an Error status saying msg. The caller holds s.mu.
func encodeSpan(b []byte, s *span, end int64, attrs func([]byte) []byte, statusErr bool, msg string) []byte {
	b = appendBytes(b, fieldTraceID, s.id.trace[:])
	b = appendBytes(b, fieldSpanID, s.id.span[:])
	if s.id.state != "" && len(s.id.state) <= maxExportedState {
		b = appendString(b, fieldTraceState, s.id.state)
	}
	if s.parent != ([8]byte{}) {
		b = appendBytes(b, fieldParentSpanID, s.parent[:])
	}
	if s.name2 == "" {
		b = appendString(b, fieldName, clean(s.name))
	} else {
		n1, n2 := clean(s.name), clean(s.name2)
		b = protowire.AppendTag(b, fieldName, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(n1)+1+len(n2)))
		b = append(append(append(b, n1...), ' '), n2...)
	}
	b = protowire.AppendTag(b, fieldKind, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(s.kind))
	b = protowire.AppendTag(b, fieldStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(s.start))
	b = protowire.AppendTag(b, fieldEnd, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(end))
	b = attrs(b)
	for i := range s.events {
		b = appendEvent(b, &s.events[i])
	}
	if s.dropped > 0 {
		b = protowire.AppendTag(b, fieldDroppedEvents, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s.dropped))
	}
	if statusErr {
		msg = clean(msg)
		b = protowire.AppendTag(b, fieldStatus, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeString(fieldStatusMessage, msg)+2))
		b = appendString(b, fieldStatusMessage, msg)
		b = protowire.AppendTag(b, fieldStatusCode, protowire.VarintType)
		b = protowire.AppendVarint(b, statusError)
	}
	flags := uint32(flagsHasIsRemote)
	if s.id.sampled {
		flags |= 1
	}
	if s.remote {
		flags |= flagsIsRemote
	}
	b = protowire.AppendTag(b, fieldFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// appendEvent appends e as a Span.Event field.
func appendEvent(b []byte, e *event) []byte {
	b = protowire.AppendTag(b, fieldEvents, protowire.BytesType)
	at := len(b)
	b = protowire.AppendTag(b, fieldEventTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(e.at))
	b = appendString(b, fieldEventName, e.name)
	switch e.name {
	case eventRefused:
		b = appendStr(b, fieldEventAttrs, keyReason, e.reason)
		if e.provider != "" {
			b = appendStr(b, fieldEventAttrs, keyProvider, e.provider)
		}
		if e.waitMS >= 0 {
			b = appendInt(b, fieldEventAttrs, keyWaitMS, e.waitMS)
		}
	case eventBackoff:
		b = appendInt(b, fieldEventAttrs, keyWaitMS, e.waitMS)
	case eventFirstToken:
		b = appendDouble(b, fieldEventAttrs, keyTTFT, e.ttft)
	}
	return prefixLen(b, at)
}

// prefixLen puts the length of b[at:] in front of it, as a length
// prefix: the message written there becomes a bytes field's value.
func prefixLen(b []byte, at int) []byte {
	n := len(b) - at
	k := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, k)...)
	copy(b[at+k:], b[at:at+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

// appendStr appends a KeyValue with a string value as field num; the
// value is cleaned (valid UTF-8, at most maxValueLen bytes).
func appendStr(b []byte, num protowire.Number, key, v string) []byte {
	v = clean(v)
	b = kvHeader(b, num, key, sizeString(fieldString, v))
	return appendString(b, fieldString, v)
}

func appendInt(b []byte, num protowire.Number, key string, v int64) []byte {
	b = kvHeader(b, num, key, 1+protowire.SizeVarint(uint64(v)))
	b = protowire.AppendTag(b, fieldInt, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendBool(b []byte, num protowire.Number, key string, v bool) []byte {
	b = kvHeader(b, num, key, 2)
	b = protowire.AppendTag(b, fieldBool, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeBool(v))
}

func appendDouble(b []byte, num protowire.Number, key string, v float64) []byte {
	b = kvHeader(b, num, key, 9)
	b = protowire.AppendTag(b, fieldDouble, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

// kvHeader appends a KeyValue's tag, length, key and its value's tag and
// length, for an AnyValue of n bytes that the caller appends next.
func kvHeader(b []byte, num protowire.Number, key string, n int) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizeString(fieldKey, key)+1+protowire.SizeBytes(n)))
	b = appendString(b, fieldKey, key)
	b = protowire.AppendTag(b, fieldValue, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(n))
}

func appendString(b []byte, num protowire.Number, v string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// sizeString is the size of a string field num holding v (its tag is
// one byte: num < 16).
func sizeString(num protowire.Number, v string) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(len(v))
}

// appendAttr appends any attribute (the resource's, the scope's: made
// once): string, bool, int64, float64; other types as their string.
func appendAttr(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	key := clean(string(kv.Key))
	switch kv.Value.Type() {
	case attribute.BOOL:
		return appendBool(b, num, key, kv.Value.AsBool())
	case attribute.INT64:
		return appendInt(b, num, key, kv.Value.AsInt64())
	case attribute.FLOAT64:
		return appendDouble(b, num, key, kv.Value.AsFloat64())
	}
	return appendStr(b, num, key, kv.Value.String())
}

// batchHeader is what comes before a batch's spans: everything of an
// ExportTraceServiceRequest that is the same in every export (the
// resource and the scope), ready to be wrapped around the spans.
type batchHeader struct {
	resource []byte // ResourceSpans.resource, tag and length included
	scope    []byte // ScopeSpans.scope, tag and length included
	schema   []byte // ScopeSpans.schema_url, tag and length included
}

func newBatchHeader(res []attribute.KeyValue, scopeName, scopeVersion, schemaURL string) batchHeader {
	var h batchHeader
	var r []byte
	for _, kv := range res {
		r = appendAttr(r, fieldResourceAttrs, kv)
	}
	h.resource = appendBytes(nil, fieldResource, r)
	s := appendString(nil, fieldScopeName, scopeName)
	if scopeVersion != "" {
		s = appendString(s, fieldScopeVersion, scopeVersion)
	}
	h.scope = appendBytes(nil, fieldScope, s)
	h.schema = appendString(nil, fieldScopeSchemaURL, schemaURL)
	return h
}

// encodeBatch is the ExportTraceServiceRequest of spans (each a Span
// message's body), in a buffer of its exact size.
func (h *batchHeader) encodeBatch(spans []*[]byte) []byte {
	n := 0
	for _, s := range spans {
		n += 1 + protowire.SizeBytes(len(*s))
	}
	scopeSpans := len(h.scope) + n + len(h.schema)
	resourceSpans := len(h.resource) + 1 + protowire.SizeBytes(scopeSpans)
	b := make([]byte, 0, 1+protowire.SizeBytes(resourceSpans))
	b = protowire.AppendTag(b, fieldResourceSpans, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(resourceSpans))
	b = append(b, h.resource...)
	b = protowire.AppendTag(b, fieldScopeSpans, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(scopeSpans))
	b = append(b, h.scope...)
	for _, s := range spans {
		b = appendBytes(b, fieldSpans, *s)
	}
	return append(b, h.schema...)
}

// rejected reads an ExportTraceServiceResponse: how many spans the
// collector rejected (partial success) and why. A body that does not
// parse rejected nothing: the collector answered 2xx.
func rejected(body []byte) (n int64, why string) {
	ps := field(body, fieldPartialSuccess, protowire.BytesType)
	if ps == nil {
		return 0, ""
	}
	if v := field(ps, fieldRejectedSpans, protowire.VarintType); v != nil {
		if x, k := protowire.ConsumeVarint(v); k > 0 {
			n = int64(x)
		}
	}
	if v := field(ps, fieldErrorMessage, protowire.BytesType); v != nil {
		why = string(v)
	}
	return n, why
}

// field is the last value of field num of type typ in the message b: a
// bytes field's content, a varint's encoding; nil when absent or when b
// does not parse.
func field(b []byte, num protowire.Number, typ protowire.Type) []byte {
	var got []byte
	for len(b) > 0 {
		n, t, k := protowire.ConsumeTag(b)
		if k < 0 {
			return nil
		}
		b = b[k:]
		var v []byte
		switch t {
		case protowire.BytesType:
			x, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			v, k = x, m
		default:
			m := protowire.ConsumeFieldValue(n, t, b)
			if m < 0 {
				return nil
			}
			v, k = b[:m], m
		}
		if n == num && t == typ {
			got = v
		}
		b = b[k:]
	}
	return got
}
