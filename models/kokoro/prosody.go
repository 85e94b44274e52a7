package kokoro

import (
	"math"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// prosodyPredictor is ProsodyPredictor: the duration encoder
// (text_encoder), the duration head (lstm, duration_proj) and the F0 and
// energy branches (shared, F0, N, F0_proj, N_proj).
type prosodyPredictor struct {
	durEncoder    durationEncoder
	lstm          lstm
	durationProj  linear // duration_proj.linear_layer
	shared        lstm
	f0, n         [3]adainResBlk1d
	f0Proj, nProj conv1d
	// n runs its convolutions in bfloat16 where the backend can; n32 is
	// the same weights in float32 (Model.Float32). The energy only scales
	// the output: n_pred stays within 2e-4 of the golden (rel L2; the
	// bound is 1e-3) and the golden waveform figures move by less than
	// 0.001. F0 stays float32: it drives the harmonic source's phase, and
	// a bfloat16 F0 branch takes the golden waveform's Pearson to 0.984.
	n32 [3]adainResBlk1d
}

func newProsodyPredictor(s *param.Scope) prosodyPredictor {
	p := prosodyPredictor{
		durEncoder:   newDurationEncoder(s.Sub("text_encoder")),
		lstm:         newLSTM(s.Sub("lstm")),
		durationProj: newLinear(s.Sub("duration_proj.linear_layer")),
		shared:       newLSTM(s.Sub("shared")),
		f0Proj:       newConv1d(s.Sub("F0_proj"), true, graph.ConvOpts{}, false),
		nProj:        newConv1d(s.Sub("N_proj"), true, graph.ConvOpts{}, false),
	}
	for i := range 3 {
		p.f0[i] = newAdainResBlk1d(s.Sub("F0").Index(i), i == 1, false)
		p.n[i] = newAdainResBlk1d(s.Sub("N").Index(i), i == 1, true)
		p.n32[i] = newAdainResBlk1d(s.Sub("N").Index(i), i == 1, false)
	}
	return p
}

// durations is the duration head: the LSTM over d, a linear projection to
// 50 bins, their sigmoids summed, divided by speed, rounded half to even
// and clamped to at least one frame. It returns the float durations [1, T]
// (pred_dur_float) and the integer ones [T] (pred_dur).
func (m *prosodyPredictor) durations(d, speed graph.Tensor) (graph.Tensor, graph.Tensor) {
	x := m.lstm.forward(d)
	logits := m.durationProj.forward(x)               // [1, T, 50]
	dur := logits.Sigmoid().Sum(false, -1).Div(speed) // [1, T]
	frames := dur.Round().Maximum(scalar(dur, 1)).Cast(graph.I64).Reshape(-1)
	return dur, frames
}

// f0n is F0Ntrain: the shared LSTM over the aligned duration features en
// [1, F, 640], then the F0 and energy branches (three AdainResBlk1d each,
// the second upsampling ×2) and their 1×1 projections. It returns F0 and
// N, each [1, 2F]; float32 picks the energy blocks in float32 (n32).
func (m *prosodyPredictor) f0n(en, s graph.Tensor, float32 bool) (f0, nrg graph.Tensor) {
	n := &m.n
	if float32 {
		n = &m.n32
	}
	x := m.shared.forward(en).Transpose(1, 2) // [1, 512, F]
	branch := func(blocks *[3]adainResBlk1d, proj *conv1d) graph.Tensor {
		y := x
		for i := range blocks {
			y = blocks[i].forward(y, s)
		}
		return proj.forward(y).Reshape(1, -1)
	}
	return branch(&m.f0, &m.f0Proj), branch(n, &m.nProj)
}

// durationEncoder is DurationEncoder: three rounds of a bidirectional LSTM
// followed by an AdaLayerNorm (lstms.0 … lstms.5, alternating), the style
// concatenated to the features before each LSTM and after the last norm.
type durationEncoder struct {
	lstms [3]lstm
	norms [3]adaLayerNorm
}

func newDurationEncoder(s *param.Scope) durationEncoder {
	var d durationEncoder
	for i := range 3 {
		d.lstms[i] = newLSTM(s.Sub("lstms").Index(2 * i))
		d.norms[i] = newAdaLayerNorm(s.Sub("lstms").Index(2*i + 1))
	}
	return d
}

// forward maps d_en [1, T, 512] and the prosody style s [1, 128] to d
// [1, T, 640].
func (m *durationEncoder) forward(dEn, s graph.Tensor) graph.Tensor {
	T := dEn.Dim(1)
	st := s.Unsqueeze(1).Expand(graph.Shape{1, T, styleDim}) // [1, T, 128]
	x := graph.Concat(2, dEn, st)
	for i := range m.lstms {
		x = m.lstms[i].forward(x)
		x = m.norms[i].forward(x, s)
		x = graph.Concat(2, x, st)
	}
	return x
}

// adaLayerNorm is AdaLayerNorm on x [1, T, C]: a LayerNorm over channels
// without affine weights, scaled by 1+γ and shifted by β from fc(s).
type adaLayerNorm struct{ fc linear }

func newAdaLayerNorm(s *param.Scope) adaLayerNorm { return adaLayerNorm{newLinear(s.Sub("fc"))} }

func (m *adaLayerNorm) forward(x, s graph.Tensor) graph.Tensor {
	C := x.Dim(2)
	h := m.fc.forward(s) // [1, 2C]
	gamma, beta := h.Slice(1, 0, C).Unsqueeze(1), h.Slice(1, C, 2*C).Unsqueeze(1)
	xn := x.LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5)
	return gamma.AddScalar(1).Mul(xn).Add(beta)
}

// adaIN1d is AdaIN1d on x [1, C, L]: instance normalisation over time whose
// scale (1+γ) and shift β come from fc(s).
type adaIN1d struct{ fc linear }

func newAdaIN1d(s *param.Scope) adaIN1d { return adaIN1d{newLinear(s.Sub("fc"))} }

func (m *adaIN1d) forward(x, s graph.Tensor) graph.Tensor {
	C := x.Dim(1)
	h := m.fc.forward(s).Unsqueeze(2) // [1, 2C, 1]
	gamma, beta := h.Slice(1, 0, C), h.Slice(1, C, 2*C)
	return gamma.AddScalar(1).Mul(x.InstanceNorm(graph.Tensor{}, graph.Tensor{}, 1e-5)).Add(beta)
}

// upsampleNearest2 repeats every time step twice (F.interpolate, scale 2,
// mode nearest) on x [1, C, L].
func upsampleNearest2(x graph.Tensor) graph.Tensor {
	C, L := x.Dim(1), x.Dim(2)
	return x.Unsqueeze(3).Expand(graph.Shape{1, C, L, 2}).Reshape(1, C, 2*L)
}

// adainResBlk1d is AdainResBlk1d: a residual of AdaIN → LeakyReLU(0.2) →
// (depthwise transposed-conv upsampling) → conv → AdaIN → LeakyReLU →
// conv, plus a shortcut (nearest upsampling, a 1×1 conv when the width
// changes), summed and divided by √2.
type adainResBlk1d struct {
	norm1, norm2 adaIN1d
	upsample     bool
	pool         convTranspose1d // when upsample
	conv1, conv2 conv1d
	learnedSC    bool
	conv1x1      conv1d // when learnedSC (dim_in ≠ dim_out)
}

func newAdainResBlk1d(s *param.Scope, upsample, bf16 bool) adainResBlk1d {
	pad1 := graph.ConvOpts{Padding: 1}
	b := adainResBlk1d{
		norm1: newAdaIN1d(s.Sub("norm1")), norm2: newAdaIN1d(s.Sub("norm2")),
		upsample: upsample,
		conv1:    newConv1d(s.Sub("conv1"), true, pad1, bf16),
		conv2:    newConv1d(s.Sub("conv2"), true, pad1, bf16),
	}
	in, out := dim(b.conv1.w, 1), dim(b.conv1.w, 0)
	if upsample {
		b.pool = newConvTranspose1d(s.Sub("pool"), graph.ConvOpts{Stride: 2, Padding: 1, OutputPadding: 1, Groups: in}, bf16)
	}
	if b.learnedSC = in != out; b.learnedSC {
		b.conv1x1 = newConv1d(s.Sub("conv1x1"), false, graph.ConvOpts{}, bf16)
	}
	return b
}

func (m *adainResBlk1d) forward(x, s graph.Tensor) graph.Tensor {
	r := m.norm1.forward(x, s).LeakyRelu(0.2)
	if m.upsample {
		r = m.pool.forward(r)
	}
	r = m.conv1.forward(r)
	r = m.norm2.forward(r, s).LeakyRelu(0.2)
	r = m.conv2.forward(r)
	sc := x
	if m.upsample {
		sc = upsampleNearest2(sc)
	}
	if m.learnedSC {
		sc = m.conv1x1.forward(sc)
	}
	return r.Add(sc).Div(scalar(r, math.Sqrt2))
}
