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
// --device cpu|cuda|metal|auto picks the compute backend every mode runs
// its models on (default $FORGE_DEVICE, else auto); --mic picks the
// microphone.
//
// A WAV file that ends before its header says (a copy cut short, a
// recording whose writer died) is used as far as it goes: every mode
// transcribes or segments the audio before the cut, warns on stderr where
// the input ended, and exits with status 3, so that a script can tell a
// partial result from a whole one.
//
// Exit codes:
//
//	0    success (and -h)
//	1    a failed run (bad input, missing model, ...)
//	2    bad flags or arguments (an unknown or unavailable --device or
//	     $FORGE_DEVICE among them)
//	3    the input was truncated: what it held was printed, with a warning
//	130  stopped by SIGINT (Ctrl-C; also how a microphone session ends)
//	143  stopped by SIGTERM
//
// After SIGINT or SIGTERM, listen stops at once: what was printed stays
// printed, and the scorecard is not written. A second signal ends the
// process without waiting for the pipeline to stop.
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
	"strings"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/backendflag"
	"github.com/tensorforge/forge/internal/gcpace"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/internal/sigexit"
	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/backends" // every backend built in, for --device
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/speech/listen"
	"go.uber.org/zap"
)

// Exit codes (130 and 143 for signals come from sigexit).
const (
	exitOK        = 0
	exitError     = 1 // the run failed (bad input, missing model, ...)
	exitUsage     = 2 // bad flags or arguments
	exitTruncated = 3 // the input was cut short; what it held was used
)

// config is everything the flags say.
type config struct {
	vadOnly bool
	json    bool
	vad     vad.Options
	input   string // the WAV file ("-" for stdin, "" for the microphone)
	log     *zap.Logger

	// transcription
	model     string
	precision whisper.Precision
	// products is the device's precision for matrix products (f16/bf16
	// with a GPU; the model itself then runs its f32 graph).
	products  kernels.DType
	language  string // a code or name, or "auto"
	beam      int
	translate bool
	tokens    bool // --json includes token ids
	noVAD     bool
	rawRate   int    // > 0: the input is raw s16le mono at this rate
	mic       string // microphone selection
	scorecard string
	backend   string // resolved --device: a registered backend that runs here
}

func main() {
	gcpace.Apply()
	ctx, stop := sigexit.Context(context.Background())
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
		err = runTranscribe(ctx, cfg, stdin, stdout, stderr)
	}
	if err != nil {
		if in, ok := sigexit.Cause(ctx); ok {
			fmt.Fprintf(stderr, "listen: %v\n", in)
			return in.ExitCode()
		}
		var cut *truncatedError
		if errors.As(err, &cut) {
			fmt.Fprintf(stderr, "listen: warning: %v\n", err)
			return exitTruncated
		}
		fmt.Fprintf(stderr, "listen: %v\n", err)
		if errors.Is(err, listen.ErrUnknownLanguage) {
			return exitUsage
		}
		return exitError
	}
	return exitOK
}

// truncatedError is how a mode reports a run that went through on an
// input cut short: everything before the cut was used, and run warns and
// exits with exitTruncated.
type truncatedError struct {
	input   string
	cause   error   // wraps audio.ErrTruncated
	seconds float64 // audio before the cut
}

func (e *truncatedError) Error() string {
	return fmt.Sprintf("%s is truncated, used the %.2f s of audio before the cut: %v", e.input, e.seconds, e.cause)
}

func (e *truncatedError) Unwrap() error { return e.cause }

// parseArgs defines and parses every flag.
func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: listen [flags] [FILE.wav | -]\n       listen --vad-only [--json] [flags] FILE.wav\n\nWithout a file, listen transcribes the microphone (portaudio builds).\n\nflags:\n")
		fs.PrintDefaults()
	}
	cfg := &config{vad: vad.DefaultOptions()}
	fs.BoolVar(&cfg.vadOnly, "vad-only", false, "print the speech segments (seconds) instead of transcribing")
	fs.BoolVar(&cfg.json, "json", false, `print JSON lines: segments {"start","end","text","avg_logprob","no_speech_prob"} (with --vad-only {"start","end"})`)
	fs.StringVar(&cfg.model, "model", "tiny", "Whisper model: "+strings.Join(whisper.Models(), " or "))
	prec := fs.String("precision", "f32", "f32 (weights dequantized, float activations), int8 (the ONNX int8 arithmetic), or on a GPU f16 / bf16 (matrix products in half precision, accumulated in f32)")
	fs.StringVar(&cfg.language, "language", "auto", `spoken language: a code (en, de, ...), a name, or "auto" to detect it on the first utterance`)
	fs.IntVar(&cfg.beam, "beam", 0, "beam search with this many beams (0: greedy)")
	fs.BoolVar(&cfg.translate, "translate", false, "translate into English instead of transcribing")
	fs.BoolVar(&cfg.tokens, "tokens", false, "with --json, include each segment's token ids")
	fs.BoolVar(&cfg.noVAD, "no-vad", false, "transcribe the whole input as one recording (30-s windows) instead of the VAD's utterances")
	fs.IntVar(&cfg.rawRate, "raw-rate", 0, "the input is headerless s16le mono PCM at this sample rate (Hz)")
	fs.StringVar(&cfg.mic, "mic", "", "microphone: index, name or part of a name (default: the system's)")
	device := backendflag.Flag(fs)
	sc := scorecards.Flag(fs)
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
	if fs.NArg() > 1 || fs.NArg() == 0 && (cfg.vadOnly || cfg.rawRate > 0) {
		fs.Usage()
		return nil, fmt.Errorf("want exactly one input file, got %d arguments", fs.NArg())
	}
	cfg.input = fs.Arg(0)
	if err := cfg.vad.Validate(); err != nil {
		return nil, err
	}
	var err error
	if cfg.backend, err = backendflag.Choose(*device); err != nil {
		return nil, err
	}
	switch strings.ToLower(*prec) {
	case "f16", "fp16", "bf16":
		cfg.precision = whisper.F32
		if cfg.products, err = backendflag.Precision(*prec, cfg.backend); err != nil {
			return nil, err
		}
	default:
		if cfg.precision, err = whisper.ParsePrecision(*prec); err != nil {
			return nil, err
		}
	}
	if _, err := whisper.ArtifactID(cfg.model); err != nil {
		return nil, err
	}
	switch {
	case cfg.beam < 0 || cfg.beam > 32:
		return nil, fmt.Errorf("--beam %d: want 0 (greedy) to 32", cfg.beam)
	case cfg.rawRate != 0 && (cfg.rawRate < audio.MinSampleRate || cfg.rawRate > audio.MaxSampleRate):
		return nil, fmt.Errorf("--raw-rate %d: %w (want %d..%d Hz)", cfg.rawRate, audio.ErrSampleRate, audio.MinSampleRate, audio.MaxSampleRate)
	case cfg.language == "":
		return nil, fmt.Errorf("--language is empty (want a code such as en, or auto)")
	}
	cfg.scorecard = *sc
	if !cfg.vadOnly {
		transcriptionVAD(fs, &cfg.vad)
	}
	cfg.log = logging.Must(stderr, *logLevel)
	return cfg, nil
}

// transcriptionVAD changes the VAD defaults that --vad-only keeps at
// Silero's own (its segments are compared with the reference tool) to
// speech/listen's DefaultVAD, which suits Whisper, for the flags the user
// did not give.
func transcriptionVAD(fs *flag.FlagSet, o *vad.Options) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	def := listen.DefaultVAD()
	if !set["vad-pad"] {
		o.SpeechPad = def.SpeechPad
	}
	if !set["vad-min-silence"] {
		o.MinSilence = def.MinSilence
	}
	if !set["vad-max-speech"] {
		o.MaxSpeech = def.MaxSpeech
	}
}
