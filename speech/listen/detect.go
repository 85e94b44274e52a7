package listen

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/logging"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/stage"
	"go.uber.org/zap"
)

// Detector finds the speech in audio with Silero VAD alone: spans of
// time, no text. It is safe for concurrent use.
type Detector struct {
	eng    *graph.Engine
	vad    *vad.Model
	log    *slog.Logger
	zlog   *zap.Logger
	loaded time.Duration
}

// Span is a stretch of speech, in seconds from the start of the input
// (exact: sample offsets over the rate the VAD ran at).
type Span struct {
	Start, End float64
}

// NewDetector loads the VAD (fetching it on first use) on the engine cfg
// names; cfg's Whisper fields are ignored.
func NewDetector(ctx context.Context, cfg Config) (*Detector, error) {
	t0 := time.Now()
	eng, log, err := setup(cfg)
	if err != nil {
		return nil, err
	}
	m, err := vad.Open(ctx, eng)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	d := &Detector{eng: eng, vad: m, log: log, zlog: logging.Zap(log), loaded: time.Since(t0)}
	log.Debug("vad model loaded", "took", d.loaded, "rates", m.SampleRates())
	return d, nil
}

// Close releases the model. Runs still going must have returned.
func (d *Detector) Close() error { return d.vad.Close() }

// Detect reads in to its end and calls emit with each span of speech, in
// order, as soon as the VAD has closed it. Audio at a rate the model
// takes (16 or 8 kHz) is scored as it is, other rates are resampled to
// 16 kHz; span times are seconds of the input either way. The zero
// vad.Options means vad.DefaultOptions (Silero's reference settings).
// Errors and cancellation are as for Transcriber.Transcribe; the Result's
// Utterances counts the spans.
func (d *Detector) Detect(ctx context.Context, in Input, o vad.Options, emit func(Span) error) (*Result, error) {
	if o == (vad.Options{}) {
		o = vad.DefaultOptions()
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	src, err := in.open(ctx, d.vad.SampleRates(), d.log)
	if err != nil {
		return nil, err
	}
	defer src.close()
	vadStage, err := d.vad.NewStage(ctx, "vad", src.rate, o)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	p := pipeline.New("listen-vad", pipeline.Logger(d.zlog))
	speech := pipeline.Then(pipeline.From(p, src.src), vadStage)
	var spans int
	pipeline.To(speech, stage.ToFunc("print", func(_ context.Context, f stage.Frame[vad.Speech]) error {
		s := f.Payload
		spans++
		return emit(Span{Start: float64(s.Start) / float64(s.Rate), End: float64(s.End) / float64(s.Rate)})
	}))
	if err := p.Run(ctx); err != nil {
		return nil, err
	}
	res := &Result{Duration: src.seconds(), Utterances: spans, Truncated: src.cut, Metrics: p.Metrics()}
	res.card = func() *scorecards.Card {
		card := scorecards.New("listen-vad")
		card.AddModel("silero-vad", "v6", "")
		card.RecordRun(res.Metrics, d.eng)
		card.SetAudioIn(res.Duration)
		card.SetLabel("load_ms", fmt.Sprintf("%.0f", float64(d.loaded.Microseconds())/1000))
		return card
	}
	return res, nil
}
