package httpapi

import (
	"context"
	"log/slog"
	"slices"
)

type logAttrsKey struct{}

// WithLogAttrs returns ctx carrying attrs in addition to any it carries
// already; a logger whose handler is wrapped with NewLogHandler adds them to
// every record logged with that context. The HTTP edge adds request_id (the
// service's own lines already name the account where it matters).
func WithLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	prev, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	return context.WithValue(ctx, logAttrsKey{}, append(slices.Clip(prev), attrs...))
}

// NewLogHandler wraps next so that records logged with a context carry the
// attributes of WithLogAttrs. Wrapping a handler that is already wrapped
// returns it unchanged. Attributes are added at the record's top level,
// or inside the groups opened with WithGroup.
func NewLogHandler(next slog.Handler) slog.Handler {
	if h, ok := next.(contextHandler); ok {
		return h
	}
	return contextHandler{next: next}
}

type contextHandler struct{ next slog.Handler }

func (h contextHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs, _ := ctx.Value(logAttrsKey{}).([]slog.Attr); len(attrs) > 0 {
		r = r.Clone()
		r.AddAttrs(attrs...)
	}
	return h.next.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contextHandler{next: h.next.WithAttrs(attrs)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{next: h.next.WithGroup(name)}
}
