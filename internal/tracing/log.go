package tracing

import (
	"context"
	"encoding/hex"
	"log/slog"
)

// LogHandler wraps h so that a record logged with a context that carries
// a span (the request's, an attempt's) says its trace_id and span_id
// (docs/ARCHITECTURE.md, "Tracing"). The daemon wraps the router's log
// with it only when tracing is on, so that tracing off costs the log
// nothing.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if s := fromContext(ctx); s != nil {
		r.AddAttrs(slog.String("trace_id", hex.EncodeToString(s.id.trace[:])), slog.String("span_id", hex.EncodeToString(s.id.span[:])))
	}
	return l.Handler.Handle(ctx, r)
}

func (l logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{l.Handler.WithAttrs(as)}
}
func (l logHandler) WithGroup(name string) slog.Handler { return logHandler{l.Handler.WithGroup(name)} }
