package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tensorforge/forge/internal/procstat"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/stage"
	"github.com/tensorforge/forge/weights"
	"go.uber.org/zap"
)

// maxWindow is the longest stretch of audio transcribed as one utterance
// when VAD segments of a file are grouped: Whisper's window.
const maxWindow = 30 * sampleRate

// utterance is a stretch of 16 kHz audio transcribed as one recording.
type utterance struct {
	start   int64     // its first sample in the input stream
	samples []float32 // owned by the receiver
	closed  time.Time // when its end was known (the VAD closed it)
}

// encoded is an utterance whose first window the encoder stage has run.
type encoded struct {
	utterance
	audio *whisper.Audio
}

// heard is the decoder stage's result for one utterance.
type heard struct {
	start  int64
	closed time.Time
	tr     *decode.Transcript
}

// runTranscribe is listen's main mode: input → VAD → grouping → encoder →
// decoder → printer, each a pipeline stage on bounded channels.
func runTranscribe(ctx context.Context, cfg *config, stdin io.Reader, stdout, stderr io.Writer) error {
	t0 := time.Now()
	// A file is opened first, so that bad input fails before the models
	// load; the microphone last, so that it does not overflow meanwhile.
	var in *pcmInput
	var err error
	if cfg.input != "" {
		if in, err = openPCM(ctx, cfg, stdin); err != nil {
			return err
		}
		defer in.close()
	}
	eng, err := newEngine(cfg)
	if err != nil {
		return err
	}
	m, closeModel, err := loadWhisper(ctx, cfg, eng, stderr)
	if err != nil {
		return err
	}
	defer closeModel()
	tok := m.Tokenizer()
	opts, err := transcribeOptions(cfg, tok)
	if err != nil {
		return err
	}
	var vm *vad.Model
	if !cfg.noVAD {
		if vm, err = vad.Open(ctx, eng); err != nil {
			return err
		}
		defer vm.Close()
	}
	loaded := time.Since(t0)
	cfg.log.Debug("models loaded", since(t0))

	if in == nil {
		if in, err = openPCM(ctx, cfg, stdin); err != nil {
			return err
		}
		defer in.close()
	}

	p := pipeline.New("listen", pipeline.Logger(cfg.log))
	pcm := pipeline.From(p, in.source)
	var utts *pipeline.Port[utterance]
	if cfg.noVAD {
		utts = pipeline.Then(pcm, stage.Process[[]float32, utterance]("collect", &collector{}))
	} else {
		vadStage, err := vm.NewStage(ctx, "vad", sampleRate, cfg.vad)
		if err != nil {
			return err
		}
		span := maxWindow
		if cfg.input == "" {
			span = 0 // live: each utterance as soon as the VAD closes it
		}
		speech := pipeline.Then(pcm, vadStage)
		utts = pipeline.Then(speech, stage.Process[vad.Speech, utterance]("group", &grouper{span: span}))
	}
	enc := pipeline.Then(utts, stage.Map("encode", func(ctx context.Context, u utterance) (encoded, error) {
		a, err := m.NewAudio(u.samples)
		if err != nil {
			return encoded{}, err
		}
		if err := a.Prepare(ctx); err != nil {
			a.Close()
			return encoded{}, err
		}
		return encoded{utterance: u, audio: a}, nil
	}), pipeline.Buffer(1))
	dec := pipeline.Then(enc, stage.Map("decode", func(ctx context.Context, e encoded) (heard, error) {
		defer e.audio.Close()
		tr, err := decode.Transcribe(ctx, e.audio, tok, opts)
		if err != nil {
			return heard{}, err
		}
		if opts.Language == "" && tr.Language != "" {
			opts.Language = tr.Language // detected once, kept for the utterances after
			cfg.log.Info("language detected", zap.String("language", tr.Language))
		}
		return heard{start: e.start, closed: e.closed, tr: tr}, nil
	}), pipeline.Buffer(1))
	var eou stage.Histogram // end of utterance → text printed
	print := transcriptPrinter(stdout, cfg)
	pipeline.To(dec, stage.ToFunc("print", func(_ context.Context, f stage.Frame[heard]) error {
		if err := print(f.Payload); err != nil {
			return err
		}
		eou.Record(time.Since(f.Payload.closed))
		return nil
	}))

	if err := p.Run(ctx); err != nil {
		return err // a signal too: it ends a live session with 130
	}
	if cfg.scorecard != "" || scorecards.Destination("") != "" {
		card := scorecards.New("listen")
		card.AddModel("whisper", strings.TrimPrefix(m.ID(), "whisper-")+"-"+m.Precision().String(), m.WeightsSHA256())
		if vm != nil {
			card.AddModel("silero-vad", "v6", "")
		}
		card.Record(p.Metrics())
		card.SetAudioIn(float64(in.samples.Load()) / sampleRate)
		card.RecordEngine(eng)
		if peak := procstat.PeakRSS(); peak > 0 {
			card.PeakBytes = scorecards.Int(peak)
		}
		card.SetLabel("load_ms", fmt.Sprintf("%.0f", float64(loaded.Microseconds())/1000))
		card.SetLabel("language", opts.Language)
		card.SetLabel("beam", fmt.Sprint(cfg.beam))
		if s := eou.Summary(); s.Count > 0 {
			card.SetLabel("utterances", fmt.Sprint(s.Count))
			card.SetLabel("eou_to_text_p50_ms", fmt.Sprintf("%.1f", float64(s.P50.Microseconds())/1000))
			card.SetLabel("eou_to_text_max_ms", fmt.Sprintf("%.1f", float64(s.Max.Microseconds())/1000))
		}
		path, err := scorecards.Save(cfg.scorecard, card)
		if err != nil {
			return fmt.Errorf("scorecard: %w", err)
		}
		fmt.Fprintf(stderr, "listen: scorecard %s (RTF %.3f)\n", path, deref(card.RTF))
	}
	return in.truncated()
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// loadWhisper opens the model, fetching it on first use with progress on
// stderr.
func loadWhisper(ctx context.Context, cfg *config, eng *graph.Engine, stderr io.Writer) (*whisper.Model, func(), error) {
	id, err := whisper.ArtifactID(cfg.model)
	if err != nil {
		return nil, nil, err
	}
	c, err := weights.NewCache()
	if err != nil {
		return nil, nil, err
	}
	c.Log = func(format string, args ...any) { fmt.Fprintf(stderr, "listen: "+format+"\n", args...) }
	if !c.Ready(id) {
		fmt.Fprintf(stderr, "listen: fetching %s into %s (first use)\n", id, c.Root)
	}
	if err := c.Ensure(ctx, id); err != nil {
		return nil, nil, err
	}
	a, err := c.Open(id)
	if err != nil {
		return nil, nil, err
	}
	m, err := whisper.New(eng, a, cfg.precision)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return m, func() { m.Close(); a.Close() }, nil
}

// errLanguage: --language names no language the model knows.
var errLanguage = errors.New("unknown language")

// transcribeOptions turns the flags into OpenAI's transcribe settings.
func transcribeOptions(cfg *config, tok *tokenizer.Tokenizer) (decode.TranscribeOptions, error) {
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(tok))
	opts.BeamSize = cfg.beam
	if cfg.translate {
		opts.Task = tokenizer.Translate
	}
	if lang := strings.ToLower(cfg.language); lang != "auto" && lang != "" {
		sp := tok.Specials()
		l, err := sp.Language(lang)
		if err != nil {
			return opts, fmt.Errorf("--language: %w: %w", errLanguage, err)
		}
		opts.Language = l.Code
	}
	return opts, nil
}

// transcriptPrinter writes each utterance's text as one line, or with
// --json one JSON object per segment.
func transcriptPrinter(w io.Writer, cfg *config) func(heard) error {
	enc := json.NewEncoder(w)
	type segment struct {
		Start        float64 `json:"start"`
		End          float64 `json:"end"`
		Text         string  `json:"text"`
		Tokens       []int32 `json:"tokens,omitempty"`
		AvgLogProb   float64 `json:"avg_logprob"`
		NoSpeechProb float64 `json:"no_speech_prob"`
	}
	return func(h heard) error {
		if !cfg.json {
			text := strings.TrimSpace(h.tr.Text)
			if text == "" {
				return nil
			}
			_, err := fmt.Fprintln(w, text)
			return err
		}
		base := seconds(h.start, sampleRate)
		for _, s := range h.tr.Segments {
			seg := segment{Start: round3(base + s.Start), End: round3(base + s.End), Text: s.Text,
				AvgLogProb: s.AvgLogProb, NoSpeechProb: s.NoSpeechProb}
			if cfg.tokens {
				seg.Tokens = s.Tokens
			}
			if err := enc.Encode(seg); err != nil {
				return err
			}
		}
		return nil
	}
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// grouper turns VAD segments into utterances. With span > 0 (files) it
// joins consecutive segments while they fit in span samples from the first
// one's start, silencing the gaps between them, so that each Whisper window
// holds as much speech as it can; with span 0 (live input) every segment is
// an utterance of its own, emitted as soon as the VAD closes it.
type grouper struct {
	span    int
	cur     *utterance
	end     int64     // end of cur in stream samples
	entered time.Time // when the audio of cur's start entered the pipeline
}

// Process implements stage.Processor.
func (g *grouper) Process(_ context.Context, f stage.Frame[vad.Speech], emit stage.Emit[utterance]) error {
	s := f.Payload
	if s.Rate != sampleRate {
		return fmt.Errorf("%w: speech at %d Hz", vad.ErrSampleRate, s.Rate)
	}
	now := time.Now()
	if g.cur != nil && s.End-g.cur.start <= int64(g.span) && s.Start >= g.end {
		gap := int(s.Start - g.end)
		g.cur.samples = append(append(g.cur.samples, make([]float32, gap)...), s.Audio...)
		g.cur.closed, g.end = now, s.End
		return nil
	}
	if err := g.flush(emit); err != nil {
		return err
	}
	g.cur = &utterance{start: s.Start, samples: s.Audio, closed: now}
	g.end, g.entered = s.End, f.Entered
	if g.span == 0 {
		return g.flush(emit)
	}
	return nil
}

// Flush implements stage.Flusher.
func (g *grouper) Flush(_ context.Context, emit stage.Emit[utterance]) error { return g.flush(emit) }

func (g *grouper) flush(emit stage.Emit[utterance]) error {
	if g.cur == nil {
		return nil
	}
	u := *g.cur
	g.cur = nil
	return emit(stage.Frame[utterance]{Offset: u.start, Rate: sampleRate, Entered: g.entered, Payload: u})
}

// collector gathers the whole input into one utterance (--no-vad): Whisper
// then transcribes it window by window as OpenAI's transcribe does.
type collector struct {
	u       utterance
	begun   bool
	entered time.Time
}

// Process implements stage.Processor.
func (c *collector) Process(_ context.Context, f stage.Frame[[]float32], _ stage.Emit[utterance]) error {
	if !c.begun {
		c.begun, c.entered, c.u.start = true, f.Entered, f.Offset
	}
	c.u.samples = append(c.u.samples, f.Payload...)
	return nil
}

// Flush implements stage.Flusher.
func (c *collector) Flush(_ context.Context, emit stage.Emit[utterance]) error {
	if len(c.u.samples) == 0 {
		return nil
	}
	c.u.closed = time.Now()
	return emit(stage.Frame[utterance]{Offset: c.u.start, Rate: sampleRate, Entered: c.entered, Payload: c.u})
}
