// Command listen turns speech into text: an audio file (WAV, FLAC, MP3 or
// Ogg/Vorbis, told apart by content), raw PCM, stdin or the microphone →
// Silero VAD → Whisper.
//
//	listen FILE...                     the transcript, one line per utterance
//	listen --format srt -o out.srt F   subtitles; -o's extension picks the format
//	listen -o DIR/ F1 F2               each input to DIR/<name>.<format's extension>
//	listen --words --format json F     JSON lines with word timings
//	listen --vad-only [--json] FILE    the speech segments: "start end" in seconds
//
// Formats (--format, or -o's extension): text (the default: a line per
// utterance), json (JSON lines: a segment per line with start, end, text,
// avg_logprob, no_speech_prob, language, and words with --words), srt,
// vtt, tsv (whisper-cli's: start and end in milliseconds), verbose
// ("[hh:mm:ss.mmm --> hh:mm:ss.mmm] text", whisper-cli's console lines)
// and verbose_json (OpenAI's). Segments are written as soon as they are
// final, so long files start printing at once. Several input files are
// transcribed one after the other with the models loaded once: to stdout
// in order, or with -o naming a folder each to a file of its own. An
// output file is written beside its path and renamed over it at the end,
// so a failed run leaves what was there.
//
// Several channels are mixed down; rates other than 16 kHz are resampled.
// Times are in seconds of the file. --threads N bounds the CPU threads
// the models compute on (default: every core). --progress reports on
// stderr how far a file is: on a terminal one line redrawn in place, to
// a file or pipe a line at every tenth of the input (and none for an input
// whose length is not known).
//
// --device cpu|cuda|metal|auto picks the compute backend every mode runs
// its models on (default $FORGE_DEVICE, else auto); --mic picks the
// microphone.
//
// A file that ends before its header says (a copy cut short, a recording
// whose writer died) is used as far as it goes: every mode transcribes or
// segments the audio before the cut, warns on stderr where the input
// ended, and exits with status 3, so that a script can tell a partial
// result from a whole one.
//
// Exit codes:
//
//	0    success (and -h)
//	1    a failed run (bad input, missing model, ...)
//	2    bad flags or arguments (an unknown or unavailable --device or
//	     $FORGE_DEVICE among them)
//	3    an input was truncated: what it held was written, with a warning
//	130  stopped by SIGINT (Ctrl-C; also how a microphone session ends)
//	143  stopped by SIGTERM
//
// After SIGINT or SIGTERM, listen stops at once: what was printed stays
// printed, an output file being written is left as it was, and the
// scorecard is not written. A second signal ends the process without
// waiting for the pipeline to stop.
//
// Structure: every flag is defined in parseArgs into one config; main only
// wires signals and exit codes; each mode (transcribe, --vad-only) is a
// function of (ctx, config, stdout) in its own file, over the library
// package speech/listen.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/backendflag"
	"github.com/tensorforge/forge/internal/gcpace"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/internal/sigexit"
	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/backends" // every backend built in, for --device
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/transcript"
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
	inputs  []string // the input files ("-" for stdin); none: the microphone
	input   string   // the input of the run in progress
	log     *zap.Logger

	// output
	format    transcript.Format
	formatSet bool   // --format (or --json) given: -o's extension does not choose
	out       string // -o: a file, or a folder for one file per input; "": stdout
	outDir    bool   // out names a folder
	words     bool   // word timings (json, verbose_json)
	progress  bool   // progress on stderr
	threads   int    // > 0: GOMAXPROCS, which sizes the CPU backend

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
	live      bool // partial text while an utterance is spoken (live.go)
	// finalPause is --final-pause: listen.Options.FinalPause (≤ 0: the
	// VAD's close only).
	finalPause time.Duration
	rawRate    int    // > 0: the input is raw s16le mono at this rate
	mic        string // microphone selection
	scorecard  string
	backend    string // resolved --device: a registered backend that runs here

	// span is how much of each window Whisper encodes (--padded-window:
	// FullWindow, else RealLength).
	span whisper.EncodeLength
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
	var reported *reportedError
	if errors.As(err, &reported) {
		return exitUsage // the flag package has said why, with the usage
	}
	if err != nil {
		fmt.Fprintf(stderr, "listen: %v\n", err)
		return exitUsage
	}
	if cfg.threads > 0 {
		runtime.GOMAXPROCS(cfg.threads) // before any backend sizes its pool
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

// reportedError is a flag error the flag package has already printed, with
// the usage; run exits without printing it again.
type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// bf16Unit names this CPU's bfloat16 unit for --precision's usage: ", this
// one has go-avx512bf16", or ", this one has none".
func bf16Unit() string {
	if u := gemm.BF16ConvPath(); u != "" {
		return ", this one has " + u
	}
	return ", this one has none"
}

// parseArgs defines and parses every flag.
func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	silero := vad.DefaultOptions()
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: listen [flags] [FILE... | -]
       listen --vad-only [--json] [flags] FILE

Transcribes audio files (WAV, FLAC, MP3 or Ogg/Vorbis, by content), stdin
(-), or without a file the microphone (portaudio builds).

flags:
`)
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nThe --vad-* defaults above are transcription's; --vad-only keeps Silero's own\n(pad %v, min silence %v, no max speech) unless given.\n", silero.SpeechPad, silero.MinSilence)
	}
	cfg := &config{vad: listen.DefaultVAD()}
	fs.BoolVar(&cfg.vadOnly, "vad-only", false, "print the speech segments (seconds) instead of transcribing")
	format := fs.String("format", "", "output `format`: text, json, srt, vtt, tsv, verbose or verbose_json (default: from -o's extension, else text)")
	fs.StringVar(&cfg.out, "o", "", "write the transcript to `FILE` (its extension picks the format) or, for a folder (existing, or ending in /), one file per input in it")
	fs.BoolVar(&cfg.json, "json", false, `same as --format json (with --vad-only: {"start","end"} lines)`)
	fs.BoolVar(&cfg.words, "words", false, "time each word (cross-attention alignment; json and verbose_json show them, at the cost of about one more encoder pass)")
	fs.IntVar(&cfg.threads, "threads", 0, "CPU threads to compute on (0: every core)")
	fs.BoolVar(&cfg.progress, "progress", false, "report progress through each file on stderr (a line redrawn on a terminal, a line per tenth otherwise)")
	fs.StringVar(&cfg.model, "model", "tiny", "Whisper model: "+strings.Join(whisper.Models(), ", "))
	prec := fs.String("precision", "f32", "f32 (weights dequantized, float activations), int8 (the ONNX int8 arithmetic), bf16 (on a CPU with bfloat16 units, AMX, or AVX512_BF16 on AMD"+bf16Unit()+": the encoder's matrix products in bfloat16, summed in f32, and the decoder steps' on 16-bit rows with AVX512_VNNI; elsewhere f32), or on a GPU f16 / bf16 (matrix products in half precision, accumulated in f32)")
	fs.StringVar(&cfg.language, "language", "auto", `spoken language: a code (en, de, ...), a name, or "auto" to detect it on the first utterance`)
	fs.IntVar(&cfg.beam, "beam", 0, "beam search with this many beams (0: greedy)")
	fs.BoolVar(&cfg.translate, "translate", false, "translate into English instead of transcribing")
	fs.BoolVar(&cfg.tokens, "tokens", false, "with --json, include each segment's token ids")
	fs.BoolVar(&cfg.noVAD, "no-vad", false, "transcribe the whole input as one recording (30-s windows) instead of the VAD's utterances")
	fs.BoolVar(&cfg.live, "live", false, "print partial text while each utterance is spoken: on a terminal a line redrawn in place until its final text, with --json one JSON event per line (partial and final)")
	fs.DurationVar(&cfg.finalPause, "final-pause", listen.DefaultFinalPause, "with --live: a pause this long makes the words so far final, though the VAD holds the utterance open until --vad-min-silence (0: final text only when the VAD closes an utterance)")
	padded := fs.Bool("padded-window", false, "encode every window as 30 s, as Whisper was trained (slower on short utterances; by default the encoder runs on each window's audio, rounded up to a second)")
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
	fs.DurationVar(&cfg.vad.MaxSpeech, "vad-max-speech", cfg.vad.MaxSpeech, "split segments longer than this (0: no limit)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &reportedError{err}
	}
	if cfg.vadOnly {
		vadOnlyDefaults(fs, &cfg.vad, silero)
	}
	if cfg.vadOnly && fs.NArg() != 1 || fs.NArg() == 0 && cfg.rawRate > 0 {
		fs.Usage()
		return nil, fmt.Errorf("want exactly one input file, got %d arguments", fs.NArg())
	}
	cfg.inputs = fs.Args()
	if err := outputArgs(cfg, *format); err != nil {
		return nil, err
	}
	if cfg.words && cfg.format != transcript.JSON && cfg.format != transcript.VerboseJSON {
		return nil, fmt.Errorf("--words: the %s format has no word times (want --format json or verbose_json)", cfg.format)
	}
	if err := cfg.vad.Validate(); err != nil {
		return nil, err
	}
	var err error
	if cfg.backend, err = backendflag.Choose(*device); err != nil {
		return nil, err
	}
	switch p := strings.ToLower(*prec); {
	case (p == "bf16" || p == "bfloat16") && cfg.backend == "cpu":
		cfg.precision = whisper.BF16 // Whisper's own bfloat16 products on the CPU's units
	case p == "f16", p == "fp16", p == "bf16":
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
	case cfg.threads < 0:
		return nil, fmt.Errorf("--threads %d: want 0 (every core) or more", cfg.threads)
	}
	cfg.scorecard = *sc
	if *padded {
		cfg.span = whisper.FullWindow
	}
	cfg.log = logging.Must(stderr, *logLevel)
	return cfg, nil
}

// vadOnlyDefaults puts back Silero's own defaults (vad.DefaultOptions,
// what the reference tool's segments are compared with) for --vad-only,
// for the VAD flags the user did not give: the flags' defaults are
// transcription's (listen.DefaultVAD), which suit Whisper.
func vadOnlyDefaults(fs *flag.FlagSet, o *vad.Options, silero vad.Options) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["vad-pad"] {
		o.SpeechPad = silero.SpeechPad
	}
	if !set["vad-min-silence"] {
		o.MinSilence = silero.MinSilence
	}
	if !set["vad-max-speech"] {
		o.MaxSpeech = silero.MaxSpeech
	}
}

// outputArgs settles the output format and destination from --format,
// --json and -o.
func outputArgs(cfg *config, format string) error {
	cfg.format, cfg.formatSet = transcript.Text, format != "" || cfg.json
	if cfg.json {
		cfg.format = transcript.JSON
	}
	if format != "" {
		f, err := transcript.ParseFormat(format)
		if err != nil {
			return fmt.Errorf("--format: %w", err)
		}
		if cfg.json && f != transcript.JSON {
			return fmt.Errorf("--json and --format %s disagree", f)
		}
		cfg.format = f
	}
	if cfg.out == "" || cfg.out == "-" {
		cfg.out = ""
		return nil
	}
	if cfg.vadOnly {
		return fmt.Errorf("-o: --vad-only prints to stdout")
	}
	if fi, err := os.Stat(cfg.out); err == nil && fi.IsDir() || strings.HasSuffix(cfg.out, string(os.PathSeparator)) {
		cfg.outDir = true
		return nil
	}
	if len(cfg.inputs) > 1 {
		return fmt.Errorf("-o %s: %d inputs need a folder to write one file each into", cfg.out, len(cfg.inputs))
	}
	if !cfg.formatSet {
		f, err := transcript.FormatForPath(cfg.out)
		if err != nil {
			return fmt.Errorf("-o: %w; or give --format", err)
		}
		cfg.format = f
	}
	return nil
}
