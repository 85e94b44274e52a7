package logging

import (
	"context"
	"log/slog"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The speech library (speech/listen, speech/say) logs through log/slog so
// that an embedder pays for no logging library; the packages below it
// (pipeline, g2p) and the commands above it use zap. Slog and Zap join the
// two: a command hands its zap logger to the library as Slog(l), and the
// library hands Zap of that to the packages below it, which gets back the
// command's own zap logger (no round trip through slog records).

// Slog returns a *slog.Logger that writes through l: the level, message
// and attributes of each record become a zap entry and its fields. A nil
// l discards.
func Slog(l *zap.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(&zapHandler{log: l})
}

// Zap returns a *zap.Logger that writes to l's handler. For a logger made
// by Slog it returns the zap logger underneath (with the attributes added
// since); nil, or a logger on slog.DiscardHandler, gives zap.NewNop.
func Zap(l *slog.Logger) *zap.Logger {
	if l == nil || l.Handler() == slog.DiscardHandler {
		return zap.NewNop()
	}
	if h, ok := l.Handler().(*zapHandler); ok && h.group == "" {
		return h.log
	}
	return zap.New(&slogCore{h: l.Handler()})
}

// zapHandler is an slog.Handler writing to a zap logger. Attributes in a
// group are flattened to "group.key" fields.
type zapHandler struct {
	log   *zap.Logger
	group string // prefix of the open groups' keys, "a.b." or ""
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	// The core, not the logger: the logger's Check would stamp this
	// adapter's own line as the caller.
	core := h.log.Core()
	ent := zapcore.Entry{Level: zapLevel(r.Level), Time: r.Time, Message: r.Message, LoggerName: h.log.Name()}
	ce := core.Check(ent, nil)
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = appendField(fields, h.group, a)
		return true
	})
	ce.Write(fields...)
	return nil
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var fields []zap.Field
	for _, a := range attrs {
		fields = appendField(fields, h.group, a)
	}
	return &zapHandler{log: h.log.With(fields...), group: h.group}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &zapHandler{log: h.log, group: h.group + name + "."}
}

// appendField appends a's zap field (or a group's fields) with the key
// prefixed.
func appendField(fields []zap.Field, prefix string, a slog.Attr) []zap.Field {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup {
		return fields // slog's rule: an empty key drops the attribute
	}
	key := prefix + a.Key
	switch v.Kind() {
	case slog.KindGroup:
		p := prefix
		if a.Key != "" {
			p = key + "."
		}
		for _, g := range v.Group() {
			fields = appendField(fields, p, g)
		}
		return fields
	case slog.KindString:
		return append(fields, zap.String(key, v.String()))
	case slog.KindInt64:
		return append(fields, zap.Int64(key, v.Int64()))
	case slog.KindUint64:
		return append(fields, zap.Uint64(key, v.Uint64()))
	case slog.KindFloat64:
		return append(fields, zap.Float64(key, v.Float64()))
	case slog.KindBool:
		return append(fields, zap.Bool(key, v.Bool()))
	case slog.KindDuration:
		return append(fields, zap.Duration(key, v.Duration()))
	case slog.KindTime:
		return append(fields, zap.Time(key, v.Time()))
	}
	if err, ok := v.Any().(error); ok {
		return append(fields, zap.NamedError(key, err))
	}
	return append(fields, zap.Any(key, v.Any()))
}

// zapLevel maps slog's levels (and those between them) onto zap's.
func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l < slog.LevelInfo:
		return zapcore.DebugLevel
	case l < slog.LevelWarn:
		return zapcore.InfoLevel
	case l < slog.LevelError:
		return zapcore.WarnLevel
	}
	return zapcore.ErrorLevel
}

// slogLevel maps zap's levels onto slog's; those above Error (DPanic,
// Panic, Fatal, which libraries here never log) become Error.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l < zapcore.InfoLevel:
		return slog.LevelDebug
	case l < zapcore.WarnLevel:
		return slog.LevelInfo
	case l < zapcore.ErrorLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// slogCore is a zapcore.Core writing to an slog.Handler.
type slogCore struct{ h slog.Handler }

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{h: c.h.WithAttrs(attrs(fields))}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	r.AddAttrs(attrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

// attrs turns zap fields into slog attributes, in key order (zap's map
// encoder is how a field of any type gives up its value).
func attrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		out = append(out, slog.Any(k, enc.Fields[k]))
	}
	return out
}
