// Package say is Forge's streaming text-to-speech pipeline as a library:
// text in, PCM out, each piece as soon as it is ready.
//
//	s, err := say.New(ctx, say.Config{})          // loads Kokoro-82M and its voices once, warmed
//	defer s.Close()
//	res, err := s.Synthesize(ctx, say.String("Hello from Forge."), say.Options{Voice: "af_heart"},
//		func(a say.Audio) error { return w.Write(a.Samples) })
//
// Text comes as a string ([String]), an io.Reader read as it arrives
// ([Reader]: a long file, a pipe), or a channel of text fragments
// ([Tokens]: an LLM's token stream, spoken sentence by sentence while the
// model is still writing). A run is a pipeline of goroutine stages on
// bounded channels (package pipeline):
//
//	text → g2p (sentences → phonemes → ids) → Kokoro (ids → 24 kHz audio) → (resample) → your callback
//
// The first sentence's audio leaves in pieces, the first after a few
// words (Options.FirstTokens), so that audio starts after a fraction of a
// sentence's synthesis time, and each later one before the audio before
// it has played (Result.Stall measures the gaps a real-time player would
// leave); later sentences are synthesised while earlier ones play. A
// sentence too long for the model is cut at clauses, a word too long for
// a chunk (a hash, a long number) into pieces; a character that still
// does not fit is left out with a warning on the Logger.
//
// A Synthesizer loads its model in New (and runs it once, so first-use
// costs are not paid by the first request) and is then safe for
// concurrent use: every call to Synthesize runs its own pipeline with its
// own voice, speed and metrics, sharing the weights and compiled
// programs. Each run's Result carries its stage metrics and time to first
// audio, and builds a forge.scorecard/v1 card (package scorecards).
// Logging goes to Config.Logger (log/slog; nothing by default).
package say

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/speech"
	"go.uber.org/zap"
)

// SampleRate is the rate Kokoro speaks at; Options.Rate resamples.
const SampleRate = kokoro.SampleRate

// DefaultVoice is the voice of Options' zero value.
const DefaultVoice = "af_heart"

// DefaultMaxTokens caps a chunk at about 15 seconds of speech: the
// generator's working memory grows with the chunk (its convolutions run
// over 24000/5 frames per second of audio), and a clause break costs
// Kokoro little.
const DefaultMaxTokens = 200

// Errors a run reports, to be matched with errors.Is. They are the model
// packages' own, named here so an embedder need not import those.
var (
	// ErrNoSpeech: the text holds nothing to say (empty, blank, or
	// punctuation alone).
	ErrNoSpeech = g2p.ErrNoSpeech
	// ErrInvalidUTF8: the text is not valid UTF-8.
	ErrInvalidUTF8 = g2p.ErrInvalidUTF8
	// ErrUnknownVoice: Options.Voice names no voice (see Voices).
	ErrUnknownVoice = kokoro.ErrUnknownVoice
	// ErrBadVoiceSpec: a voice mix that does not parse.
	ErrBadVoiceSpec = kokoro.ErrBadVoiceSpec
	// ErrLang: Options.Lang is not a language the phonemiser speaks.
	ErrLang = g2p.ErrLang
	// ErrBadOptions: a speed, rate or chunk size out of its range.
	ErrBadOptions = errors.New("say: bad options")
)

// Config chooses the model of a Synthesizer. The zero value is Kokoro-82M
// v1.0 on the best device here, its decoder in bfloat16 on CPUs with AMX,
// or AVX512_BF16 on AMD's cores, by Winograd's minimal filtering in
// float32 on other CPUs with AVX-512.
type Config struct {
	// Int8 loads the int8 (dynamically quantized) artifact.
	Int8 bool
	// Float32 runs every layer in float32 and every convolution directly
	// (by default the decoder runs in bfloat16 on CPUs with AMX, or
	// AVX512_BF16 on AMD's cores, and by Winograd's minimal filtering on
	// other CPUs with AVX-512; see kokoro.Model.Float32).
	Float32 bool
	// Device names the compute backend when Engine is nil ("" or "auto":
	// the best registered one that runs here; see speech.NewEngine).
	Device string
	// Products is the device's precision for matrix products when Engine
	// is nil: kernels.F32 (or zero), or F16 / BF16 on a GPU.
	Products kernels.DType
	// Engine, if set, is the engine the model runs on, shared with other
	// models (a Transcriber); Device and Products are then ignored.
	Engine *graph.Engine
	// Logger receives warnings about text left out and debug events;
	// nil discards.
	Logger *slog.Logger
	// Cold skips the warm-up run in New: the first Synthesize pays the
	// first-use costs instead (weights faulted in, and on the first run
	// on this machine packed for the kernels, kept on disk after that
	// run). For a process that speaks once and exits, such as the say
	// command with its text on the command line or in a file: warming
	// ran the model twice there, and its packs, given back after each
	// convolution, were read in twice (on the 2-core Intel VM, `say
	// "Button."` took 0.45–0.55 s warmed against 0.33–0.39 s cold, its
	// first audio 30–50 ms later). A server, or text that arrives while
	// the model loads (a pipe), keeps the warm-up.
	Cold bool
}

// Synthesizer turns text into speech; see the package doc. It is safe for
// concurrent use.
type Synthesizer struct {
	eng     *graph.Engine
	weights *kokoro.Weights
	voices  *kokoro.Voices
	model   *kokoro.Model
	variant string // for scorecards: "v1.0" or "v1.0-int8"
	float32 bool
	log     *slog.Logger
	zlog    *zap.Logger
	loaded  time.Duration // weights and voices loaded, model bound
	warmed  time.Duration // first-use costs paid by Warm
	cold    bool          // Config.Cold: no warm-up; packs saved after runs
}

// New loads Kokoro and its voices (fetching them into the model cache on
// first use), binds them to the engine and warms the model.
func New(ctx context.Context, cfg Config) (*Synthesizer, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t0 := time.Now()
	eng := cfg.Engine
	if eng == nil {
		var err error
		if eng, err = speech.NewEngine(cfg.Device, cfg.Products); err != nil {
			return nil, err
		}
	}
	s := &Synthesizer{eng: eng, variant: "v1.0", float32: cfg.Float32, cold: cfg.Cold, log: log, zlog: logging.Zap(log)}
	if cfg.Int8 {
		s.variant = "v1.0-int8"
	}
	var err error
	if s.voices, err = kokoro.LoadVoices(ctx); err != nil {
		return nil, fmt.Errorf("say: %w", err)
	}
	if s.weights, err = kokoro.LoadWeights(ctx, cfg.Int8); err != nil {
		s.voices.Close()
		return nil, fmt.Errorf("say: %w", err)
	}
	if s.model, err = kokoro.New(eng, s.weights); err != nil {
		s.Close()
		return nil, fmt.Errorf("say: %w", err)
	}
	if cfg.Float32 {
		s.model = s.model.Float32()
	}
	s.loaded = time.Since(t0)
	// First-use costs (mapped weights faulted in, weights packed for the
	// GEMMs, weight-only subgraphs folded) are paid here, before any text
	// is accepted, so that a run's time to first audio is that of a ready
	// model; a cold synthesizer leaves them to its first run.
	if !cfg.Cold {
		t1 := time.Now()
		if err := s.model.Warm(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("say: %w", err)
		}
		s.warmed = time.Since(t1)
		// Every weight is packed now: later processes map the packs.
		speech.SavePacks(eng, log)
	}
	log.Debug("kokoro loaded", "variant", s.variant, "load", s.loaded, "warm", s.warmed)
	return s, nil
}

// Close releases the weights and voices. Runs still going must have
// returned.
func (s *Synthesizer) Close() error {
	err := s.voices.Close()
	if s.weights != nil {
		err = errors.Join(err, s.weights.Close())
	}
	return err
}

// Voices lists the voice names Options.Voice takes (a name, or a mix of
// them: "af_heart,am_michael:0.5").
func (s *Synthesizer) Voices() []string { return s.voices.Names() }

// Engine returns the engine the model runs on.
func (s *Synthesizer) Engine() *graph.Engine { return s.eng }

// LoadTime returns how long New took to load the model, and to warm it.
func (s *Synthesizer) LoadTime() (load, warm time.Duration) { return s.loaded, s.warmed }
