// Command listen turns speech into text: WAV → Silero VAD → Whisper.
//
// Today it has one mode, --vad-only, which prints the speech segments the
// VAD finds:
//
//	listen --vad-only FILE.wav          one line per segment: "start end" in seconds
//	listen --vad-only --json FILE.wav   JSON lines: {"start":…,"end":…}
//
// Segments are printed as soon as they are final (the audio is streamed
// through the VAD stage), so long files start printing at once. Several
// channels are mixed down; rates other than 16 and 8 kHz are resampled to
// 16 kHz. Times are in seconds of the file.
//
// Structure, for the modes to come: every flag is defined in parseArgs
// into one config; main only wires signals and exit codes; each mode is a
// function of (ctx, config, stdout) in its own file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/models/vad"
	"go.uber.org/zap"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the run failed (bad input, missing model, ...)
	exitUsage = 2 // bad flags or arguments
)

// config is everything the flags say.
type config struct {
	vadOnly bool
	json    bool
	vad     vad.Options
	input   string // the WAV file ("-" for stdin)
	log     *zap.Logger
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it parses args, runs the mode and
// returns the exit code, reporting errors on stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "listen: %v\n", err)
		return exitUsage
	}
	defer cfg.log.Sync() //nolint:errcheck // stderr sync errors are not actionable
	switch {
	case cfg.vadOnly:
		err = runVADOnly(ctx, cfg, stdin, stdout)
	default:
		err = errors.New("transcription is not available yet; use --vad-only to print speech segments")
	}
	if err != nil {
		fmt.Fprintf(stderr, "listen: %v\n", err)
		return exitError
	}
	return exitOK
}

// parseArgs defines and parses every flag.
func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: listen --vad-only [--json] [flags] FILE.wav\n\nflags:\n")
		fs.PrintDefaults()
	}
	cfg := &config{vad: vad.DefaultOptions()}
	fs.BoolVar(&cfg.vadOnly, "vad-only", false, "print the speech segments (seconds) instead of transcribing")
	fs.BoolVar(&cfg.json, "json", false, `print JSON lines {"start":s,"end":s} instead of "start end"`)
	logLevel := logging.Flag(fs)
	fs.Float64Var(&cfg.vad.Threshold, "vad-threshold", cfg.vad.Threshold, "speech probability that starts a segment")
	fs.Float64Var(&cfg.vad.NegThreshold, "vad-neg-threshold", 0, "probability below which speech ends (0: threshold − 0.15)")
	fs.DurationVar(&cfg.vad.MinSpeech, "vad-min-speech", cfg.vad.MinSpeech, "drop segments shorter than this")
	fs.DurationVar(&cfg.vad.MinSilence, "vad-min-silence", cfg.vad.MinSilence, "silence that ends a segment")
	fs.DurationVar(&cfg.vad.SpeechPad, "vad-pad", cfg.vad.SpeechPad, "padding on each side of a segment")
	fs.DurationVar(&cfg.vad.MaxSpeech, "vad-max-speech", 0, "split segments longer than this (0: no limit)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, fmt.Errorf("want exactly one input file, got %d arguments", fs.NArg())
	}
	cfg.input = fs.Arg(0)
	if err := cfg.vad.Validate(); err != nil {
		return nil, err
	}
	cfg.log = logging.Must(stderr, *logLevel)
	return cfg, nil
}

// seconds renders a sample offset as seconds, exactly (offsets at 16 kHz
// are multiples of 62.5 µs: no rounding noise, no lost digits).
func seconds(samples int64, rate int) float64 {
	return float64(samples) / float64(rate)
}

// since is a small helper for debug logs.
func since(t time.Time) zap.Field { return zap.Duration("took", time.Since(t)) }
