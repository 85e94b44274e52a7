// Package logging builds the zap loggers Forge's commands use: quiet by
// default (warnings and errors only, so a CLI's stdout and stderr stay
// clean), debug when asked with a --log flag or FORGE_LOG=debug.
//
// Libraries in Forge take a logger from their caller (nil for silence)
// and never log per frame or per sample: the speech packages a service
// embeds take a *slog.Logger, the packages below them a *zap.Logger; Slog
// and Zap convert between the two. This package is for the programs at
// the top and for that seam.
package logging

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// EnvVar names the environment variable that sets the level when no flag
// does.
const EnvVar = "FORGE_LOG"

// DefaultLevel is the level when neither flag nor environment sets one.
const DefaultLevel = "warn"

// Flag registers --log on fs and returns its value, for New.
func Flag(fs *flag.FlagSet) *string {
	return fs.String("log", "", "log level: debug, info, warn, error or off (default $"+EnvVar+", else "+DefaultLevel+")")
}

// ParseLevel parses a level name. "off" (or "none") silences everything.
func ParseLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "warn", "warning":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	case "off", "none":
		return zapcore.FatalLevel + 1, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn, error or off)", s)
}

// Level resolves the level name to use: flagValue if set, else $FORGE_LOG,
// else DefaultLevel.
func Level(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv(EnvVar); v != "" {
		return v
	}
	return DefaultLevel
}

// New returns a human-readable logger writing to w (os.Stderr for a CLI) at
// the level Level(flagValue) names. At debug level entries carry the
// caller's file and line.
func New(w io.Writer, flagValue string) (*zap.Logger, error) {
	name := Level(flagValue)
	lvl, err := ParseLevel(name)
	if err != nil {
		src := "--log"
		if flagValue == "" {
			src = "$" + EnvVar
		}
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), lvl)
	var opts []zap.Option
	if lvl <= zapcore.DebugLevel {
		opts = append(opts, zap.AddCaller())
	}
	return zap.New(core, opts...), nil
}

// Must is New for main functions: on a bad level it reports the error on w
// and falls back to the default level, because a typo in a log level should
// not stop a run.
func Must(w io.Writer, flagValue string) *zap.Logger {
	l, err := New(w, flagValue)
	if err != nil {
		fmt.Fprintf(w, "logging: %v; using %s\n", err, DefaultLevel)
		l, _ = New(w, DefaultLevel)
	}
	return l
}
