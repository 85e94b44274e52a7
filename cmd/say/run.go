package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/tensorforge/forge/internal/backendflag"
	"github.com/tensorforge/forge/internal/ctxio"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/internal/outfile"
	"github.com/tensorforge/forge/internal/sigexit"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/backends" // every backend built in, for --device
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/speech/say"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the run failed (bad text, missing model, ...)
	exitUsage = 2 // bad flags or arguments
)

// errUsage is a flag error whose message the flag package has printed.
var errUsage = errors.New("usage")

// argError is a bad command line: main reports it and exits with
// exitUsage.
type argError struct{ err error }

func (e argError) Error() string { return e.err.Error() }
func (e argError) Unwrap() error { return e.err }

// badArgs marks err as a bad command line.
func badArgs(format string, args ...any) error {
	return argError{fmt.Errorf(format, args...)}
}

// exitCode reports err on stderr (unless the flag package already has)
// and returns the process's exit code for it: a run that a signal stopped
// (ctx's cause) gets the shell's 128+n, whatever error the stop produced.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if in, ok := sigexit.Cause(ctx); ok {
		fmt.Fprintln(stderr, "say:", in)
		return in.ExitCode()
	}
	if !errors.Is(err, errUsage) {
		fmt.Fprintln(stderr, "say:", err)
	}
	if errors.As(err, new(argError)) {
		return exitUsage
	}
	return exitError
}

// options are the parsed flags.
type options struct {
	out        string
	rate       int
	voice      string
	speed      float64
	lang       string
	int8       bool
	fp32       bool
	scorecard  string
	listVoices bool
	backend    string        // resolved --device: a registered backend that runs here
	products   kernels.DType // --precision: the device's matrix products
	first      int
	maxTokens  int
	logLevel   string // --log: warnings (text left out) reach stderr by default
	format     string // --format: "wav" or "raw"; "" when not given
	inputFile  string // -f / --input-file: read the text from this file ("-": stdin)
	ipa        bool   // --ipa: print phonemes instead of speaking
	text       []string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.out, "o", "", "write the speech to `FILE` instead of playing it (\"-\": standard output); the file appears only when complete")
	fs.StringVar(&o.format, "format", "", "output format `wav|raw` (raw: 16-bit little-endian mono PCM at --rate, no header); without -o, written to standard output (default wav)")
	fs.StringVar(&o.inputFile, "f", "", "read the text from `FILE` (\"-\": standard input): a line break or a sentence end ends an utterance")
	fs.StringVar(&o.inputFile, "input-file", "", "same as -f `FILE`")
	fs.BoolVar(&o.ipa, "ipa", false, "print the phonemes Kokoro reads (espeak-ng IPA as rewritten for Kokoro), a line per chunk, instead of speaking")
	fs.IntVar(&o.rate, "rate", kokoro.SampleRate, "output sample rate in `Hz` (resampled from 24000)")
	fs.StringVar(&o.voice, "voice", "af_heart", "voice `NAME`, or a mix NAME[:weight],NAME[:weight]...")
	fs.Float64Var(&o.speed, "speed", 1, "speaking rate (1 is normal, 2 twice as fast)")
	fs.StringVar(&o.lang, "lang", "", "phonemiser `language`, an espeak-ng code: en-us, en-gb (en), es, fr (fr-fr), hi, it, pt-br (default: the voice's)")
	fs.BoolVar(&o.int8, "int8", false, "use the int8 dynamically quantized model")
	fs.BoolVar(&o.fp32, "fp32", false, "run every layer in float32, every convolution directly (by default the decoder uses bfloat16 on CPUs with AMX, or AVX512_BF16 on AMD, and Winograd's minimal filtering on other AVX-512 CPUs)")
	sc := scorecards.Flag(fs)
	fs.BoolVar(&o.listVoices, "list-voices", false, "list the voices with their language and gender, and exit")
	fs.IntVar(&o.maxTokens, "max-tokens", say.DefaultMaxTokens, "longest chunk in phoneme `tokens` (at most 510): longer sentences are cut at clauses; memory and latency grow with it")
	fs.IntVar(&o.first, "first", kokoro.DefaultFirstTokens, "stream the audio in pieces, the first within about `N` phoneme tokens, so audio starts sooner (0: every sentence whole)")
	device := backendflag.Flag(fs)
	logLevel := logging.Flag(fs)
	products := fs.String("precision", "f32", "matrix products on a GPU: f32, or f16 / bf16 (half-precision operands, f32 accumulation)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: say [flags] TEXT...   (or text on standard input)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, argError{errUsage}
	}
	o.scorecard = *sc
	o.logLevel = *logLevel
	o.text = fs.Args()
	switch o.format {
	case "", "wav", "raw":
	default:
		return nil, badArgs("--format %q: want wav or raw", o.format)
	}
	if o.format != "" && o.out == "" {
		o.out = "-"
	}
	if o.inputFile != "" && len(o.text) > 0 {
		return nil, badArgs("text given both as arguments and with -f %s", o.inputFile)
	}
	if o.rate < audio.MinSampleRate || o.rate > audio.MaxSampleRate {
		return nil, badArgs("--rate %d: want a sample rate of %d to %d Hz", o.rate, audio.MinSampleRate, audio.MaxSampleRate)
	}
	if o.maxTokens < 16 || o.maxTokens > kokoro.MaxPhonemes {
		return nil, badArgs("--max-tokens %d: want 16 to %d", o.maxTokens, kokoro.MaxPhonemes)
	}
	if !(o.speed > 0.1 && o.speed < 10) {
		return nil, badArgs("--speed %v: want a value between 0.1 and 10", o.speed)
	}
	var err error
	if o.backend, err = backendflag.Choose(*device); err != nil {
		return nil, argError{err}
	}
	if o.products, err = backendflag.Precision(*products, o.backend); err != nil {
		return nil, argError{err}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	// Text given as arguments is checked before anything loads: blank text
	// fails at once, and the output file is never touched.
	if len(o.text) > 0 && !o.listVoices && strings.TrimSpace(strings.Join(o.text, " ")) == "" {
		return fmt.Errorf("nothing to say: %w", say.ErrNoSpeech)
	}
	if o.listVoices {
		return listVoices(ctx, stdout)
	}
	text := say.Reader(ctxio.Reader(ctx, stdin)) // a signal must not wait for text that may never come
	switch {
	case len(o.text) > 0:
		text = say.String(strings.Join(o.text, " "))
	case o.inputFile != "" && o.inputFile != "-":
		f, err := os.Open(o.inputFile)
		if err != nil {
			return err
		}
		defer f.Close()
		text = say.Reader(f)
	}
	opts := say.Options{Voice: o.voice, Speed: o.speed, Lang: o.lang, Rate: o.rate, MaxTokens: o.maxTokens}
	if o.ipa {
		err := say.Phonemize(ctx, text, opts, func(_, ph string) error {
			_, err := fmt.Fprintln(stdout, ph)
			return err
		})
		if errors.Is(err, say.ErrNoSpeech) {
			return fmt.Errorf("nothing to say: %w", err)
		}
		return err
	}
	var sink func(pcm []float32) error
	if o.out == "" {
		play, closePlayer, err := newPlayer(o.rate)
		if err != nil {
			return err
		}
		sink = func(pcm []float32) error { return play(ctx, pcm) }
		defer func() {
			if cerr := closePlayer(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	synth, err := say.New(ctx, say.Config{
		Int8: o.int8, Float32: o.fp32, Device: o.backend, Products: o.products,
		Logger: logging.Slog(logging.Must(stderr, o.logLevel)),
		// Text on the command line or in a file is there at once: a
		// warm-up would only run the model twice. Text from standard
		// input may come while the model warms, so that keeps it (see
		// say.Config.Cold).
		Cold: len(o.text) > 0 || (o.inputFile != "" && o.inputFile != "-"),
	})
	if err != nil {
		return err
	}
	defer synth.Close()

	if o.out != "" {
		// The output is created with the first audio, so that a run that
		// fails before it (an unknown voice) writes nothing, not even a
		// header to standard output.
		var ws *wavSink
		sink = func(pcm []float32) error {
			if ws == nil {
				var werr error
				if ws, werr = newWAVSink(o.out, stdout, o.rate, o.format == "raw"); werr != nil {
					return werr
				}
			}
			return ws.write(pcm)
		}
		defer func() {
			if ws != nil {
				err = ws.finish(err) // run's result decides: commit or remove
			}
		}()
	}
	first := o.first
	if first == 0 {
		first = -1 // --first 0: never cut
	}
	opts.FirstTokens = first
	res, err := synth.Synthesize(ctx, text, opts, func(a say.Audio) error { return sink(a.Samples) })
	if err != nil {
		if errors.Is(err, say.ErrNoSpeech) {
			return fmt.Errorf("nothing to say: %w", err)
		}
		return err
	}
	card := res.Scorecard()
	if path, err := scorecards.Save(o.scorecard, card); err != nil {
		return fmt.Errorf("scorecard: %w", err)
	} else if path != "" && path != "-" {
		fmt.Fprintf(stderr, "say: scorecard %s (RTF %.3f, TTFA %.0f ms)\n", path, deref(card.RTF), deref(card.TTFAMs))
	}
	return nil
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// sinkFunc plays one block of output samples at the output rate.
type sinkFunc func(ctx context.Context, pcm []float32) error

// listVoices prints the voices say speaks, with their language and
// gender, and a footer naming the ones left out and why.
func listVoices(ctx context.Context, stdout io.Writer) error {
	voices, err := say.ListVoices(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VOICE\tLANG\tLANGUAGE\tGENDER")
	for _, v := range voices {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Name, v.Lang, v.Language, v.Gender)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\n%s\n", say.Unlisted())
	return err
}

// wavSink streams 16-bit PCM into the -o output as chunks arrive (a WAV,
// or raw samples): a file that appears only when the run succeeds, or
// standard output for "-".
type wavSink struct {
	out *outfile.File // nil for standard output
	w   *audio.Writer
}

func newWAVSink(path string, stdout io.Writer, rate int, raw bool) (*wavSink, error) {
	s := &wavSink{}
	dst := stdout
	if path != "-" {
		f, err := outfile.Create(path)
		if err != nil {
			return nil, err
		}
		s.out, dst = f, f
	}
	newWriter := audio.NewWAVWriter
	if raw {
		newWriter = audio.NewRawWriter
	}
	w, err := newWriter(dst, audio.S16Mono(rate))
	if err != nil {
		if s.out != nil {
			s.out.Abort()
		}
		return nil, err
	}
	s.w = w
	return s, nil
}

func (s *wavSink) write(pcm []float32) error { return s.w.Write(pcm) }

// finish ends the output of a run that returned runErr and returns the
// run's result. After a success the WAV's sizes are patched (where the
// output seeks) and the file renamed into place; after a failure or a
// signal the temporary file is removed, so FILE.wav keeps what it held. A
// stream just stops: its sizes say "unknown" and it holds whole samples.
func (s *wavSink) finish(runErr error) error {
	if runErr != nil {
		if s.out != nil {
			s.out.Abort()
		}
		return runErr
	}
	err := s.w.Close()
	if s.out == nil {
		return err
	}
	if err != nil {
		s.out.Abort()
		return err
	}
	return s.out.Commit()
}
