package kokoro

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// SampleRate is the rate of the audio Kokoro produces.
const SampleRate = 24000

// StyleSize is the width of a style vector: 128 decoder (timbre) values,
// then 128 prosody values.
const StyleSize = 2 * styleDim

// MaxPhonemes is the most phoneme ids one call takes, not counting the two
// pad ids around them (ALBERT has 512 positions).
const MaxPhonemes = maxPosition - 2

// SamplesPerFrame is how many output samples one predicted duration unit
// (one alignment frame) becomes.
const SamplesPerFrame = 600

// MaxFrames bounds the audio of one call: 8000 frames are 200 seconds.
// The decoder's memory grows with the frames, and only a very slow speed
// on a very long chunk comes near this.
const MaxFrames = 8000

// Errors of Synthesize's arguments.
var (
	// ErrNoPhonemes: the ids hold no phoneme between the pads.
	ErrNoPhonemes = errors.New("kokoro: no phonemes to speak")
	// ErrTooLong: more than MaxPhonemes phoneme ids.
	ErrTooLong = errors.New("kokoro: too many phonemes for one chunk")
	// ErrBadID: an id outside the vocabulary.
	ErrBadID = errors.New("kokoro: phoneme id out of range")
	// ErrBadStyle: a style vector that is not StyleSize finite values.
	ErrBadStyle = errors.New("kokoro: bad style vector")
	// ErrBadSpeed: speed not a positive finite number.
	ErrBadSpeed = errors.New("kokoro: bad speed")
)

// Model is Kokoro-82M bound to a graph engine. It is safe for concurrent
// use: each call builds its own graphs, which share the engine's compiled
// programs and weights.
type Model struct {
	eng     *graph.Engine
	w       *Weights
	k       *kmodel
	vocab   int  // rows of the embedding tables
	float32 bool // see Float32
	// graphSource builds the generator's source on the engine's device
	// (generator.harmonic) instead of on the host (harmonicSpectrum):
	// on devices, which cannot reproduce the reference's rounding noise
	// anyway and would otherwise wait for the host between two programs.
	graphSource bool
}

// New binds weights to an engine. The weights must stay open while the
// model is used.
func New(eng *graph.Engine, w *Weights) (*Model, error) {
	if eng == nil || w == nil {
		return nil, errors.New("kokoro: New needs an engine and weights")
	}
	k, err := newKModel(param.New(weightSource{w}, "kokoro: weights "+w.ID))
	if err != nil {
		return nil, err
	}
	return &Model{eng: eng, w: w, k: k, vocab: k.bert.word.Shape[0], graphSource: eng.Backend().Name() != "cpu"}, nil
}

// Float32 returns the model with every layer in float32 and every
// convolution computed directly. By default the decoder and generator
// (graph 3: some 50 GFLOP per second of audio) run their convolutions in
// bfloat16 where the CPU has a bfloat16 unit (gemm.HasBF16Conv: AMX tiles,
// about six times faster than float32, or AVX512_BF16 on AMD's cores,
// about twice), on other CPUs with AVX-512 by Winograd's minimal
// filtering in float32 (graph.ConvOpts.Winograd: 1.5–2 times faster on
// the generator's shapes on Intel's cores without AMX, relative L2 1e-4
// from the direct float32 waveform). The golden waveform figures stay within 0.002 of the float32
// ones, the waveform at Pearson ≥ 0.995 against both the golden and this
// model's float32 run (TestGoldenParity, TestFastConvGate).
// So do the energy branch's convolutions in graph 2 (n_pred within 2e-4 of
// the golden, rel L2; the waveform figures move by less than 0.001). The
// text encoder, the duration path and the F0 branch always run in float32:
// the durations must match the reference exactly, and the F0 drives the
// harmonic source's phase, which bfloat16 would make drift (the golden
// waveform's Pearson falls to 0.984 with a bfloat16 F0 branch).
func (m *Model) Float32() *Model {
	c := *m
	c.float32 = true
	return &c
}

// GraphSource returns the model with the generator's harmonic source and
// its STFT built as graph ops on the engine's backend (generator.harmonic),
// as New sets it for every backend but the CPU. The CPU's default, the
// host source, reproduces the reference's FFT rounding noise, whose sign
// decides the phase of bins that are zero in exact arithmetic; no device
// reproduces it, so a device is compared with the CPU at this setting,
// where both compute the same exact transform.
func (m *Model) GraphSource() *Model {
	c := *m
	c.graphSource = true
	return &c
}

// Weights returns the model's weights.
func (m *Model) Weights() *Weights { return m.w }

// Trace is one utterance's result with the intermediates the parity tests
// compare (names as in the golden files).
type Trace struct {
	// DurationsFloat is pred_dur_float: the summed sigmoids over speed, [T].
	DurationsFloat []float32
	// Durations is pred_dur: frames per input id, [T].
	Durations []int64
	// F0 and N are f0_pred and n_pred, [2F] for F = sum(Durations).
	F0, N []float32
	// ASR is asr_aligned, the text features repeated by the durations,
	// [512, F] row-major.
	ASR []float32
	// Audio is the waveform, 600·F samples at 24 kHz.
	Audio []float32
}

// Synthesize speaks one chunk: ids are vocabulary ids wrapped in the 0 pad
// at both ends (at most MaxPhonemes between them), style a StyleSize
// vector (a voice's row for len(ids)−2 phonemes), speed 1 for normal pace.
// It returns 24 kHz samples.
func (m *Model) Synthesize(ctx context.Context, ids []int64, style []float32, speed float32) ([]float32, error) {
	tr, err := m.Forward(ctx, ids, style, speed)
	if err != nil {
		return nil, err
	}
	return tr.Audio, nil
}

// check validates Synthesize's arguments.
func (m *Model) check(ids []int64, style []float32, speed float32) error {
	if len(ids) < 3 {
		return fmt.Errorf("%w (%d ids, want pads around at least one phoneme)", ErrNoPhonemes, len(ids))
	}
	if len(ids)-2 > MaxPhonemes {
		return fmt.Errorf("%w: %d, at most %d", ErrTooLong, len(ids)-2, MaxPhonemes)
	}
	for i, id := range ids {
		if id < 0 || id >= int64(m.vocab) {
			return fmt.Errorf("%w: ids[%d] = %d, vocabulary has %d", ErrBadID, i, id, m.vocab)
		}
	}
	if len(style) != StyleSize {
		return fmt.Errorf("%w: %d values, want %d", ErrBadStyle, len(style), StyleSize)
	}
	for i, v := range style {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: style[%d] = %v", ErrBadStyle, i, v)
		}
	}
	if !(speed > 0) || math.IsInf(float64(speed), 0) {
		return fmt.Errorf("%w: %v", ErrBadSpeed, speed)
	}
	return nil
}

// Forward runs the whole model and keeps the intermediates.
func (m *Model) Forward(ctx context.Context, ids []int64, style []float32, speed float32) (*Trace, error) {
	tr, err := m.prosodyTrace(ctx, ids, style, speed)
	if err != nil {
		return nil, err
	}
	if err := m.runDecoder(ctx, style, tr, sourceSpan{}); err != nil {
		return nil, err
	}
	return tr, nil
}

// frames returns the number of alignment frames, sum(durations).
func frames(dur []int64) int {
	total := 0
	for _, d := range dur {
		total += int(d)
	}
	return total
}

// runText runs graph 1 and fills the durations of tr; it returns the
// duration-encoder features d [T, 640] and text features t_en [512, T],
// held in the engine's memory for graph 2 (the caller closes them). The
// text encoder shares nothing with ALBERT's branch but the ids, so it
// runs as a graph of its own beside it: its convolutions and LSTM use the
// core that ALBERT's serial steps (norms, softmaxes, the ends of its
// parallel products) leave idle. The results are the same; only the
// order of independent steps changes.
func (m *Model) runText(ctx context.Context, ids []int64, style []float32, speed float32, tr *Trace) (d, tEn *graph.Held, err error) {
	T := len(ids)
	var enOut *graph.Held
	var enErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		g := stageGraph()
		out := m.k.textEncoder.forward(g.InputI64("input_ids", graph.Shape{1, T}, ids))
		if enErr = check(out); enErr != nil {
			return
		}
		held, err := m.eng.EvalHeld(ctx, out)
		if err != nil {
			enErr = fmt.Errorf("kokoro: text encoder: %w", err)
			return
		}
		enOut = held[0]
	}()
	defer func() {
		<-done
		switch {
		case err != nil:
			closeHeld(enOut)
		case enErr != nil:
			closeHeld(d)
			d, err = nil, enErr
		default:
			tEn = enOut
		}
	}()
	g := stageGraph()
	idsT := g.InputI64("input_ids", graph.Shape{1, T}, ids)
	styleT := g.InputF32("style", graph.Shape{1, StyleSize}, style)
	speedT := g.InputF32("speed", graph.Shape{1}, []float32{speed})
	out := m.k.durationStage(idsT, styleT, speedT)
	if err := check(out.durFloat, out.dur, out.d); err != nil {
		return nil, nil, err
	}
	held, err := m.eng.EvalHeld(ctx, out.durFloat, out.dur, out.d)
	if err != nil {
		return nil, nil, fmt.Errorf("kokoro: text stage: %w", err)
	}
	defer closeHeld(held[0], held[1])
	vals := make([]*graph.Value, 2)
	for i := range vals {
		if vals[i], err = held[i].Value(ctx); err != nil {
			closeHeld(held[2])
			return nil, nil, fmt.Errorf("kokoro: text stage: %w", err)
		}
	}
	tr.DurationsFloat = vals[0].F32()
	tr.Durations = vals[1].I64()
	return held[2], nil, nil
}

// stageGraph returns a graph for the text and prosody stages, which
// compute in float32 whatever the backend's products do
// (graph.Graph.FullPrecision). Their durations set the audio's length,
// and the harmonic source integrates their F0 into phases over seconds:
// with f16 products on an H100 the paragraph's F0 moved by 1.5e-3
// (relative L2) and its waveform fell to Pearson 0.64 against the CPU's.
// They are a small part of the work; the decoder's convolutions, nearly
// all of it, keep the backend's precision.
func stageGraph() *graph.Graph {
	g := graph.New()
	g.FullPrecision()
	return g
}

// closeHeld closes the held values that are not nil.
func closeHeld(hs ...*graph.Held) {
	for _, h := range hs {
		if h != nil {
			h.Close()
		}
	}
}

// runProsody runs graph 2: the alignment and the F0/energy predictors.
func (m *Model) runProsody(ctx context.Context, d, tEn *graph.Held, style []float32, tr *Trace) error {
	g := stageGraph()
	T := len(tr.Durations)
	F := frames(tr.Durations)
	dT := g.InputHeld("d", d)
	tEnT := g.InputHeld("t_en", tEn)
	durT := g.InputI64("pred_dur", graph.Shape{T}, tr.Durations)
	styleT := g.InputF32("style", graph.Shape{1, StyleSize}, style)
	out := m.k.prosodyStage(dT, tEnT, durT, styleT, F, m.float32)
	if err := check(out.f0, out.n, out.asr); err != nil {
		return err
	}
	vals, err := m.eng.Eval(ctx, out.f0, out.n, out.asr)
	if err != nil {
		return fmt.Errorf("kokoro: prosody stage: %w", err)
	}
	tr.F0 = vals[0].F32()
	tr.N = vals[1].F32()
	tr.ASR = vals[2].F32()
	return nil
}

// runDecoder runs graph 3, the decoder and the generator, as three
// graphs. The decoder's features and the generator's harmonic sources
// (from the harmonic source, computed on the host) share nothing but the
// style, so they run side by side: the sources' long convolutions use the
// core that the decoder's narrow ones (a few dozen frames in a streamed
// window) and its norms leave idle. Then the generator joins them, reading
// both where they were left (graph.Held): on a GPU they never cross to the
// host. The results are the same as in one graph. span places tr's frames
// in a longer utterance, whose harmonic source runs on from its start (the
// zero span: tr is the utterance, or its beginning).
func (m *Model) runDecoder(ctx context.Context, style []float32, tr *Trace, span sourceSpan) error {
	dec := &m.k.decoder
	if m.float32 {
		dec = &m.k.decoder32
	}
	gen := &dec.generator
	var src []*graph.Held
	var srcErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		g := graph.New()
		var harT graph.Tensor
		switch {
		case m.graphSource && span.f0 != nil:
			harT = gen.harmonic(g.InputF32("f0", graph.Shape{1, len(span.f0)}, span.f0), span.lo, span.hi)
		case m.graphSource:
			harT = gen.harmonic(g.InputF32("f0", graph.Shape{1, len(tr.F0)}, tr.F0), 0, len(tr.F0)/2)
		default:
			var spec []float32
			if span.f0 != nil {
				spec = sourceStretch(span.host(), len(span.f0)/2, span.lo, span.hi)
			} else {
				spec = m.sourceSpectrum(tr.F0)
			}
			harT = g.InputF32("har", graph.Shape{1, 2 * specBins, len(spec) / (2 * specBins)}, spec)
		}
		out := gen.sources(harT, timbre(g, style))
		if srcErr = check(out[0], out[1]); srcErr != nil {
			return
		}
		if src, srcErr = m.eng.EvalHeld(ctx, out[0], out[1]); srcErr != nil {
			srcErr = fmt.Errorf("kokoro: generator sources: %w", srcErr)
		}
	}()
	x, err := m.decoderFeatures(ctx, dec, style, tr)
	<-done
	defer closeHeld(append(src, x)...)
	if err != nil {
		return err
	}
	if srcErr != nil {
		return srcErr
	}
	// The generator's working memory (some 20 MB a second of audio) makes
	// the process's peak: the weight pages the stages before it read in
	// place are given back first, and only the generator's own come back.
	m.w.releasePages()
	g := graph.New()
	wave := gen.forward(g.InputHeld("x", x), timbre(g, style), [2]graph.Tensor{g.InputHeld("src0", src[0]), g.InputHeld("src1", src[1])})
	if err := check(wave); err != nil {
		return err
	}
	vals, err := m.eng.Eval(ctx, wave)
	if err != nil {
		return fmt.Errorf("kokoro: generator: %w", err)
	}
	tr.Audio = vals[0].F32()
	return nil
}

// sourceSpan places a decoder window in its utterance: the utterance's
// F0 curve (nil: the window is the utterance or its beginning), the
// window's frames [lo, hi) in it, and the utterance's host source
// spectrogram, computed once for all its windows.
type sourceSpan struct {
	f0     []float32
	lo, hi int
	host   func() []float32
}

// sourceSpectrum is the generator's source spectrogram of the F0 curve
// f0 (see harmonicSpectrum), with this model's l_linear.
func (m *Model) sourceSpectrum(f0 []float32) []float32 {
	gen := &m.k.decoder.generator
	if m.float32 {
		gen = &m.k.decoder32.generator
	}
	return harmonicSpectrum(f0, gen.lLinearW.Float32s(), gen.lLinearB.Float32s()[0])
}

// decoderFeatures runs the decoder of graph 3 up to its generator; the
// features stay held for it.
func (m *Model) decoderFeatures(ctx context.Context, dec *decoder, style []float32, tr *Trace) (*graph.Held, error) {
	g := graph.New()
	F := len(tr.F0) / 2
	asr := g.InputF32("asr", graph.Shape{1, hiddenDim, F}, tr.ASR)
	f0 := g.InputF32("f0", graph.Shape{1, 2 * F}, tr.F0)
	nrg := g.InputF32("n", graph.Shape{1, 2 * F}, tr.N)
	x := dec.features(asr, f0, nrg, timbre(g, style))
	if err := check(x); err != nil {
		return nil, err
	}
	held, err := m.eng.EvalHeld(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("kokoro: decoder stage: %w", err)
	}
	return held[0], nil
}

// timbre is the decoder half of the style vector, ref_s[:, :128], as an
// input of g.
func timbre(g *graph.Graph, style []float32) graph.Tensor {
	return g.InputF32("style", graph.Shape{1, StyleSize}, style).Slice(1, 0, styleDim)
}

// Warm pays the first-use costs so that the first real utterance does
// not: every weight packed for its kernels (the decoder's and generator's
// convolutions in bfloat16, the products' packed operands), weight-only
// subgraphs folded, the GEMM threads started. A server or CLI calls it
// while loading; the audio is discarded. The text and prosody stages
// speak "Hello world." at warmSpeed, where every phoneme lasts the least,
// one frame; beside them, since it needs only the number of frames, the
// decoder and generator run on as many silent frames (zero F0, energy and
// text features). Each runs every kernel a real utterance runs, on a
// third of the audio the sentence has at normal pace, and the decoder's
// packing, most of the cost, overlaps the text stage's.
func (m *Model) Warm(ctx context.Context) error {
	style := make([]float32, StyleSize)
	var decErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		F := len(warmIDs)
		decErr = m.runDecoder(ctx, style, &Trace{F0: make([]float32, 2*F), N: make([]float32, 2*F), ASR: make([]float32, hiddenDim*F)}, sourceSpan{})
	}()
	_, err := m.warmTrace(ctx)
	<-done
	return errors.Join(err, decErr)
}

// warmIDs is "Hello world.", Warm's utterance. With its pads it is 16
// tokens, so 16 frames at warmSpeed: more than 8 along every axis, as a
// real utterance is. The CPU backend runs a convolution over 8 frames or
// fewer as a GEMM on a weight packed another way, so with fewer the first
// real utterance would still pack the convolutions' weights.
var warmIDs = []int64{0, 50, 83, 54, 156, 57, 135, 16, 65, 156, 87, 158, 54, 46, 4, 0}

// warmSpeed is the pace Warm speaks at: every phoneme's summed duration
// sigmoids (a few frames at speed 1) divided by it rounds to 0, so each
// lasts one frame, the least.
const warmSpeed = 100

// warmTrace runs the text and prosody stages on Warm's utterance.
func (m *Model) warmTrace(ctx context.Context) (*Trace, error) {
	return m.prosodyTrace(ctx, warmIDs, make([]float32, StyleSize), warmSpeed)
}
