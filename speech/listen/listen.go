// Package listen is Forge's streaming speech-to-text pipeline as a
// library: audio in, timed text segments out, each as soon as it is final.
//
//	t, err := listen.New(ctx, listen.Config{Model: "tiny"}) // loads Whisper and Silero VAD once
//	defer t.Close()
//	in, err := listen.File(f)                               // or Raw, PCM, NewStream, Microphone
//	res, err := t.Transcribe(ctx, in, listen.Options{Language: "en"}, func(s listen.Segment) error {
//		fmt.Printf("[%.2f–%.2f] %s\n", s.Start, s.End, s.Text)
//		return nil
//	})
//
// A run is a pipeline of goroutine stages on bounded channels (package
// pipeline):
//
//	input → (resample to 16 kHz) → Silero VAD → grouping → Whisper encoder → Whisper decoder → your callback
//
// The VAD cuts the audio into utterances. From a file, consecutive
// utterances are grouped into windows of up to 30 s (Whisper's window, so
// each encoder pass holds as much speech as it can); from a live input (a
// Stream, a microphone, or Options.Live) each utterance is transcribed as
// soon as the VAD closes it. Options.NoVAD transcribes the whole input as
// one recording in 30-s windows, as OpenAI's transcribe does. The encoder
// runs one utterance ahead of the decoder.
//
// A Transcriber loads its models in New and is then safe for concurrent
// use: every call to Transcribe runs its own pipeline with its own
// options, decoding state and metrics, sharing the weights and compiled
// programs. Transcribe returns when the input has ended and every segment
// has been handed over, when the callback returns an error, or when ctx
// ends (with ctx's error; no goroutine is left behind).
//
// A Detector runs the VAD alone (speech spans, no text) and loads no
// Whisper model.
//
// Each run's Result carries its stage metrics (frames, busy and wait time,
// latency percentiles per stage) and builds a forge.scorecard/v1 card
// (package scorecards). Logging goes to Config.Logger (log/slog; nothing
// by default); nothing is logged per frame.
package listen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/speech"
	"go.uber.org/zap"
)

// SampleRate is the rate the models run at; inputs at other rates are
// resampled to it.
const SampleRate = 16000

// Config chooses the models of a Transcriber or Detector. The zero value
// is Whisper tiny in float32 with the VAD, on the best device here.
type Config struct {
	// Model is the Whisper size ("tiny", the default, "base" or "small"; see
	// whisper.Models) or its artifact id ("whisper-base"). The weights are
	// fetched into the model cache on first use.
	Model string
	// Precision is Whisper's arithmetic: whisper.F32 (the default:
	// weights dequantized once, float activations), whisper.BF16 (F32
	// with the encoder's products in bfloat16 on a CPU with bfloat16
	// units, AMX or AVX512_BF16 on AMD, and the decoder steps' on 16-bit rows
	// with AVX512_VNNI; F32 elsewhere) or whisper.Int8 (the ONNX export's
	// integer arithmetic).
	Precision whisper.Precision
	// Device names the compute backend when Engine is nil ("" or "auto":
	// the best registered one that runs here; see speech.NewEngine). A
	// Transcriber's VAD runs on the CPU whatever the device (vadEngine).
	Device string
	// Products is the device's precision for matrix products when Engine
	// is nil: kernels.F32 (or zero), or F16 / BF16 on a GPU.
	Products kernels.DType
	// Engine, if set, is the engine the models run on, shared with other
	// models (a Synthesizer, another Transcriber); Device and Products are
	// then ignored.
	Engine *graph.Engine
	// NoVAD skips loading the VAD: every run is then Options.NoVAD.
	NoVAD bool
	// EncodeLength is how much of each window Whisper's encoder runs on:
	// whisper.RealLength (the default: the audio, rounded up to a second)
	// or whisper.FullWindow (30 s, as Whisper was trained).
	EncodeLength whisper.EncodeLength
	// Logger receives the few events worth a line (resampling, the
	// language detected, stage failures at debug level); nil discards.
	Logger *slog.Logger
	// WarmUp runs Whisper once in New on a second of silence (warmUp), so
	// that the first utterance does not pay what Whisper computes once per
	// model: New then takes about 0.8 s longer with tiny and 1.9 s with
	// base on a 2-core CPU, which a live session's first partial and final
	// would otherwise wait for.
	WarmUp bool
}

// Transcriber turns speech into text; see the package doc. It is safe for
// concurrent use.
type Transcriber struct {
	eng    *graph.Engine
	whisp  *whisper.Model
	vad    *vad.Model // nil with Config.NoVAD
	log    *slog.Logger
	zlog   *zap.Logger // log, for the pipeline package
	loaded time.Duration
}

// New loads the models cfg names (fetching them into the model cache on
// first use) and returns a Transcriber on them.
func New(ctx context.Context, cfg Config) (*Transcriber, error) {
	t0 := time.Now()
	name := cfg.Model
	if name == "" {
		name = "tiny"
	}
	if _, err := whisper.ArtifactID(name); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	eng, log, err := setup(cfg)
	if err != nil {
		return nil, err
	}
	m, err := whisper.Open(ctx, eng, name, cfg.Precision, whisper.WithEncodeLength(cfg.EncodeLength))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	t := &Transcriber{eng: eng, whisp: m, log: log, zlog: logging.Zap(log)}
	if !cfg.NoVAD {
		veng, err := vadEngine(eng)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("listen: %w", err)
		}
		if t.vad, err = vad.Open(ctx, veng); err != nil {
			m.Close()
			return nil, fmt.Errorf("listen: %w", err)
		}
	}
	if cfg.WarmUp {
		if err := t.warmUp(ctx); err != nil {
			t.Close()
			return nil, fmt.Errorf("listen: warm-up: %w", err)
		}
	}
	t.loaded = time.Since(t0)
	log.Debug("models loaded", "whisper", m.ID(), "precision", m.Precision().String(), "vad", t.vad != nil, "took", t.loaded)
	return t, nil
}

// warmUp transcribes a second of silence, greedily, in one window of
// at most warmTokens tokens: the first window shorter than 30 s computes
// the model's silence tail (a 30-s encoding, whisper.RealLength's one-time
// cost: 0.85 s for tiny and 1.9 s for base on the 2-core EPYC, against
// 15–35 ms for the same window after it), and the encoder's and decoder's
// first programs are built. It ends with ctx.
func (t *Transcriber) warmUp(ctx context.Context) error {
	a, err := t.whisp.NewAudio(make([]float32, SampleRate))
	if err != nil {
		return err
	}
	defer a.Close()
	dec, err := a.Encode(ctx, 0, a.Frames())
	if err != nil {
		return err
	}
	opts, err := t.decodeOptions(Options{})
	if err != nil {
		return err
	}
	o := opts.Options
	o.SampleLen = warmTokens
	_, err = decode.Decode(ctx, dec, t.whisp.Tokenizer(), o)
	return err
}

// warmTokens bounds the warm-up's decoding: a few steps build the step
// programs; silence read longer only costs time.
const warmTokens = 4

// setup returns the engine and logger cfg asks for.
func setup(cfg Config) (*graph.Engine, *slog.Logger, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Engine != nil {
		return cfg.Engine, log, nil
	}
	eng, err := speech.NewEngine(cfg.Device, cfg.Products)
	return eng, log, err
}

// vadEngine returns the engine a Transcriber's VAD runs on: eng where it
// computes on the CPU, else an engine of its own on the CPU. A stream's VAD
// is a small model run on every 32 ms of audio, about 20 µs of CPU work,
// while on a GPU each chunk waits on a launch and a read back (jfk.wav on
// an H100: the VAD stage was busy 174 ms on the GPU, 8 ms on the host's
// CPU, and held the rest of the pipeline back). Many streams at once are
// worth a GPU only batched into one launch (vad.Model.NewBatch).
func vadEngine(eng *graph.Engine) (*graph.Engine, error) {
	if eng.Backend().Name() == "cpu" {
		return eng, nil
	}
	return speech.NewEngine("cpu", kernels.F32)
}

// Close releases the models. Runs still going must have returned.
func (t *Transcriber) Close() error {
	err := t.whisp.Close()
	if t.vad != nil {
		err = errors.Join(err, t.vad.Close())
	}
	return err
}

// Model returns the Whisper model in use by its artifact id
// ("whisper-tiny").
func (t *Transcriber) Model() string { return t.whisp.ID() }

// Engine returns the engine the models run on.
func (t *Transcriber) Engine() *graph.Engine { return t.eng }

// LoadTime returns how long New took to load the models.
func (t *Transcriber) LoadTime() time.Duration { return t.loaded }

// DefaultVAD returns the VAD settings a transcription uses unless told
// otherwise: Silero's own (vad.DefaultOptions) with 400 ms of padding
// (faster-whisper's default; 30 ms clips word endings, and "clubs" became
// "Clopes"), utterances closed after 500 ms of silence rather than at
// every 100 ms pause, and none longer than one 30-s window.
func DefaultVAD() vad.Options {
	o := vad.DefaultOptions()
	o.SpeechPad = 400 * time.Millisecond
	o.MinSilence = 500 * time.Millisecond
	o.MaxSpeech = 29 * time.Second
	return o
}
