package logging

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestSlogToZap: records logged through Slog reach the zap core with
// their level, message and attributes (groups flattened, errors as
// errors), and levels the core disables are not built.
func TestSlogToZap(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := Slog(zap.New(core)).With("run", 7).WithGroup("vad")
	for _, c := range []struct {
		name  string
		log   func()
		level zapcore.Level
		msg   string
		want  map[string]any
	}{
		{"info with attrs", func() { l.Info("segment", "start", 1.5, slog.Group("span", "n", 3)) }, zapcore.InfoLevel, "segment",
			map[string]any{"run": int64(7), "vad.start": 1.5, "vad.span.n": int64(3)}},
		{"warn with error", func() { l.Warn("left out", "err", errors.New("too long"), "took", time.Second) }, zapcore.WarnLevel, "left out",
			map[string]any{"run": int64(7), "vad.err": "too long", "vad.took": time.Second}},
		{"error", func() { l.Error("failed") }, zapcore.ErrorLevel, "failed", map[string]any{"run": int64(7)}},
		{"debug is below the core's level", func() { l.Debug("quiet") }, 0, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs.TakeAll()
			c.log()
			got := logs.TakeAll()
			if c.want == nil {
				if len(got) != 0 {
					t.Fatalf("logged %+v, want nothing", got)
				}
				return
			}
			if len(got) != 1 || got[0].Level != c.level || got[0].Message != c.msg {
				t.Fatalf("logged %+v, want one %v entry %q", got, c.level, c.msg)
			}
			fields := got[0].ContextMap()
			for k, v := range c.want {
				if fields[k] != v {
					t.Errorf("field %q = %#v, want %#v (all: %v)", k, fields[k], v, fields)
				}
			}
		})
	}
}

// TestZapRoundTrip: Zap of a logger made by Slog is the zap logger
// underneath, so packages below the speech library log to the command's
// logger directly; nil and discarding loggers give a no-op logger.
func TestZapRoundTrip(t *testing.T) {
	z := zap.NewExample()
	if got := Zap(Slog(z)); got != z {
		t.Errorf("Zap(Slog(l)) = %p, want l %p", got, z)
	}
	for _, l := range []*slog.Logger{nil, slog.New(slog.DiscardHandler), Slog(nil)} {
		if got := Zap(l); got.Core().Enabled(zapcore.ErrorLevel) {
			t.Errorf("Zap(%v) logs errors, want a no-op logger", l)
		}
	}
}

// TestZapToSlog: a zap logger over a foreign slog handler writes its
// entries there with the level mapped and the fields as attributes.
func TestZapToSlog(t *testing.T) {
	var b bytes.Buffer
	h := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	z := Zap(slog.New(h)).With(zap.String("pipeline", "listen"))
	z.Debug("hidden")
	z.Warn("stage failed", zap.String("stage", "vad"), zap.Int("n", 2))
	want := "level=WARN msg=\"stage failed\" pipeline=listen n=2 stage=vad\n"
	if got := b.String(); got != want {
		t.Errorf("slog output %q, want %q", got, want)
	}
	if strings.Contains(b.String(), "hidden") {
		t.Error("a debug entry passed an info handler")
	}
}
