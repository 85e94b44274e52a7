package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tensorforge/forge/internal/backendflag"
	"github.com/tensorforge/forge/internal/ctxio"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/internal/outfile"
	"github.com/tensorforge/forge/internal/procstat"
	"github.com/tensorforge/forge/internal/sigexit"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/backends" // every backend built in, for --device
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/stage"
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

// defaultMaxTokens caps a chunk at about 15 seconds of speech: the
// generator's working memory grows with the chunk (its convolutions run
// over 24000/5 frames per second of audio), and a clause break costs
// Kokoro little.
const defaultMaxTokens = 200

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
	text       []string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("say", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.out, "o", "", "write the speech to `FILE.wav` instead of playing it (\"-\": standard output); the file appears only when complete")
	fs.IntVar(&o.rate, "rate", kokoro.SampleRate, "output sample rate in `Hz` (resampled from 24000)")
	fs.StringVar(&o.voice, "voice", "af_heart", "voice `NAME`, or a mix NAME[:weight],NAME[:weight]...")
	fs.Float64Var(&o.speed, "speed", 1, "speaking rate (1 is normal, 2 twice as fast)")
	fs.StringVar(&o.lang, "lang", "", "phonemiser language `en-us|en-gb` (default: the voice's)")
	fs.BoolVar(&o.int8, "int8", false, "use the int8 dynamically quantized model")
	fs.BoolVar(&o.fp32, "fp32", false, "run every layer in float32 (by default the decoder uses bfloat16 on CPUs with AMX)")
	sc := scorecards.Flag(fs)
	fs.BoolVar(&o.listVoices, "list-voices", false, "list the voices and exit")
	fs.IntVar(&o.maxTokens, "max-tokens", defaultMaxTokens, "longest chunk in phoneme `tokens` (at most 510): longer sentences are cut at clauses; memory and latency grow with it")
	fs.IntVar(&o.first, "first", kokoro.DefaultFirstTokens, "cut the first sentence after about `N` phoneme tokens so audio starts sooner (0: never cut)")
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
		return fmt.Errorf("nothing to say: %w", g2p.ErrNoSpeech)
	}
	voices, err := kokoro.LoadVoices(ctx)
	if err != nil {
		return err
	}
	defer voices.Close()
	if o.listVoices {
		for _, n := range voices.Names() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}
	voice, err := voices.Voice(o.voice)
	if err != nil {
		return err
	}
	lang, err := g2p.LangOfVoice(voice.Primary)
	if o.lang != "" {
		lang, err = g2p.ParseLang(o.lang)
	}
	if err != nil {
		return err
	}
	var sink sinkFunc
	if o.out == "" {
		play, closePlayer, err := newPlayer(o.rate)
		if err != nil {
			return err
		}
		sink = play
		defer func() {
			if cerr := closePlayer(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	front, err := g2p.NewEspeak(lang)
	if err != nil {
		return err
	}
	loadStart := time.Now()
	w, err := kokoro.LoadWeights(ctx, o.int8)
	if err != nil {
		return err
	}
	defer w.Close()
	backend, err := kernels.Open(o.backend, kernels.Options{Precision: o.products})
	if err != nil {
		return err
	}
	eng := graph.NewEngine(backend)
	model, err := kokoro.New(eng, w)
	if err != nil {
		return err
	}
	if o.fp32 {
		model = model.Float32()
	}
	loaded := time.Since(loadStart)
	// First-use costs (mapped weights faulted in, weights packed for the
	// GEMMs, weight-only subgraphs folded) are paid here, before any text
	// is accepted: TTFA measures the pipeline with the model ready.
	warmStart := time.Now()
	if err := model.Warm(ctx); err != nil {
		return err
	}
	warmed := time.Since(warmStart)

	text := ctxio.Reader(ctx, stdin) // a signal must not wait for text that may never come
	if len(o.text) > 0 {
		text = strings.NewReader(strings.Join(o.text, " "))
	}
	if o.out != "" {
		ws, werr := newWAVSink(o.out, stdout, o.rate)
		if werr != nil {
			return werr
		}
		sink = ws.write
		defer func() { err = ws.finish(err) }() // run's result decides: commit or remove
	}

	card := scorecards.New("say")
	card.AddModel("kokoro", variant(o.int8), w.SHA256)
	card.SetLabel("voice", voice.Name)
	card.SetLabel("lang", lang.String())
	card.SetLabel("load_ms", fmt.Sprintf("%.0f", float64(loaded.Microseconds())/1000))
	card.SetLabel("warm_ms", fmt.Sprintf("%.0f", float64(warmed.Microseconds())/1000))
	card.SetLabel("ttfa_from", "pipeline start (text accepted), model loaded and warmed")
	if o.fp32 {
		card.SetLabel("precision", "fp32")
	}

	speakChunk := func(ctx context.Context, c g2p.Chunk) ([]float32, error) {
		return model.SpeakChunk(ctx, c, voice, float32(o.speed))
	}
	chunker := &g2p.Chunker{G2P: front, MaxTokens: o.maxTokens, Log: logging.Must(stderr, o.logLevel)}
	p, produced, err := buildPipeline(chunker, speakChunk, o.first, o.rate, text, sink)
	if err != nil {
		return err
	}
	runErr := p.Run(ctx)
	card.Record(p.Metrics())
	card.SetAudioOut(float64(*produced) / float64(o.rate))
	card.RecordEngine(eng)
	if peak := procstat.PeakRSS(); peak > 0 {
		card.PeakBytes = scorecards.Int(peak)
	}
	if runErr != nil {
		if errors.Is(runErr, g2p.ErrNoSpeech) {
			return fmt.Errorf("nothing to say: %w", runErr)
		}
		return runErr
	}
	if path, err := scorecards.Save(o.scorecard, card); err != nil {
		return fmt.Errorf("scorecard: %w", err)
	} else if path != "" && path != "-" {
		fmt.Fprintf(stderr, "say: scorecard %s (RTF %.3f, TTFA %.0f ms)\n", path, deref(card.RTF), deref(card.TTFAMs))
	}
	return nil
}

func variant(int8 bool) string {
	if int8 {
		return "v1.0-int8"
	}
	return "v1.0"
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// sinkFunc consumes one block of output samples at the output rate.
type sinkFunc func(ctx context.Context, pcm []float32) error

// speakFunc synthesises one chunk at 24 kHz (the model with its voice and
// speed bound in; tests pass a stand-in).
type speakFunc func(ctx context.Context, c g2p.Chunk) ([]float32, error)

// buildPipeline wires text → g2p (sentence chunks, phonemes, ids) →
// kokoro → (resample) → sink. The first chunk is cut after about
// firstTokens phoneme tokens (0: never). produced counts the samples the
// sink got.
func buildPipeline(chunker *g2p.Chunker, speak speakFunc, firstTokens, rate int, text io.Reader, sink sinkFunc) (*pipeline.Pipeline, *int64, error) {
	p := pipeline.New("say")
	accepted := time.Now()
	chunks := pipeline.From(p, stage.NewSource("g2p", func(ctx context.Context, emit stage.Emit[g2p.Chunk]) error {
		for c, err := range chunker.Chunks(ctx, text) {
			if err != nil {
				return err
			}
			f := stage.Frame[g2p.Chunk]{Offset: int64(c.Index), Payload: c}
			if c.Index == 0 {
				f.Entered = accepted // TTFA counts from the text being accepted
			}
			if err := emit(f); err != nil {
				return err
			}
		}
		return nil
	}))
	var offset int64
	synth := stage.ProcessFunc[g2p.Chunk, []float32](func(ctx context.Context, f stage.Frame[g2p.Chunk], emit stage.Emit[[]float32]) error {
		pieces := []g2p.Chunk{f.Payload}
		if f.Payload.Index == 0 && firstTokens > 0 {
			if a, b, ok := kokoro.SplitFirst(f.Payload, firstTokens); ok {
				pieces = []g2p.Chunk{a, b}
			}
		}
		for _, c := range pieces {
			pcm, err := speak(ctx, c)
			if err != nil {
				return err
			}
			out := stage.Frame[[]float32]{Offset: offset, Rate: kokoro.SampleRate, Entered: f.Entered, Payload: pcm}
			offset += int64(len(pcm))
			if err := emit(out); err != nil {
				return err
			}
		}
		return nil
	})
	speech := pipeline.Then(chunks, stage.Process[g2p.Chunk, []float32]("kokoro", synth), pipeline.Buffer(1))
	if rate != kokoro.SampleRate {
		rs, err := resample.New(kokoro.SampleRate, rate)
		if err != nil {
			return nil, nil, err
		}
		speech = pipeline.Then(speech, stage.Process[[]float32, []float32]("resample", &resampler{rs: rs}), pipeline.Buffer(1))
	}
	produced := new(int64)
	pipeline.To(speech, stage.ToFunc("sink", func(ctx context.Context, f stage.Frame[[]float32]) error {
		*produced += int64(len(f.Payload))
		return sink(ctx, f.Payload)
	}))
	return p, produced, nil
}

// resampler converts the 24 kHz stream to the output rate, carrying the
// filter state across chunks and flushing it at the end.
type resampler struct {
	rs  *resample.Resampler
	off int64
}

func (r *resampler) Process(_ context.Context, f stage.Frame[[]float32], emit stage.Emit[[]float32]) error {
	y := r.rs.Process(nil, f.Payload)
	out := stage.Frame[[]float32]{Offset: r.off, Rate: r.rs.OutRate(), Entered: f.Entered, Payload: y}
	r.off += int64(len(y))
	return emit(out)
}

func (r *resampler) Flush(_ context.Context, emit stage.Emit[[]float32]) error {
	y := r.rs.Flush(nil)
	if len(y) == 0 {
		return nil
	}
	return emit(stage.Frame[[]float32]{Offset: r.off, Rate: r.rs.OutRate(), Payload: y})
}

// wavSink streams 16-bit PCM into the -o output as chunks arrive: a file
// that appears only when the run succeeds, or standard output for "-".
type wavSink struct {
	out *outfile.File // nil for standard output
	w   *audio.Writer
}

func newWAVSink(path string, stdout io.Writer, rate int) (*wavSink, error) {
	s := &wavSink{}
	dst := stdout
	if path != "-" {
		f, err := outfile.Create(path)
		if err != nil {
			return nil, err
		}
		s.out, dst = f, f
	}
	w, err := audio.NewWAVWriter(dst, audio.S16Mono(rate))
	if err != nil {
		if s.out != nil {
			s.out.Abort()
		}
		return nil, err
	}
	s.w = w
	return s, nil
}

func (s *wavSink) write(_ context.Context, pcm []float32) error { return s.w.Write(pcm) }

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
