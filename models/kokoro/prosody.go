package kokoro

import (
	"math"

	"github.com/tensorforge/forge/graph"
)

// adaIN1d is AdaIN1d on x [1, C, L]: instance normalisation over time whose
// scale (1+γ) and shift β come from fc(s).
func (n *net) adaIN1d(pre string, x, s graph.Tensor) graph.Tensor {
	C := x.Dim(1)
	h := n.linear(pre+".fc", s).Unsqueeze(2) // [1, 2C, 1]
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
func (n *net) adainResBlk1d(pre string, x, s graph.Tensor, upsample bool) graph.Tensor {
	cin := x.Dim(1)
	r := n.adaIN1d(pre+".norm1", x, s).LeakyRelu(0.2)
	if upsample {
		r = n.convTranspose1d(pre+".pool", r, graph.ConvOpts{Stride: 2, Padding: 1, OutputPadding: 1, Groups: cin})
	}
	r = n.conv1d(pre+".conv1", r, true, graph.ConvOpts{Padding: 1})
	r = n.adaIN1d(pre+".norm2", r, s).LeakyRelu(0.2)
	r = n.conv1d(pre+".conv2", r, true, graph.ConvOpts{Padding: 1})
	sc := x
	if upsample {
		sc = upsampleNearest2(sc)
	}
	if cout := r.Dim(1); cout != cin {
		sc = n.conv1d(pre+".conv1x1", sc, false, graph.ConvOpts{})
	}
	return r.Add(sc).Div(n.scalar(math.Sqrt2))
}

// prosody is ProsodyPredictor.F0Ntrain: the shared LSTM over the aligned
// duration features en [1, F, 640], then the F0 and energy branches (three
// AdainResBlk1d each, the second upsampling ×2) and their 1×1 projections.
// It returns F0 and N, each [1, 2F].
func (n *net) prosody(en, s graph.Tensor) (f0, nrg graph.Tensor) {
	x := n.lstm("predictor.shared", en).Transpose(1, 2) // [1, 512, F]
	branch := func(name string) graph.Tensor {
		y := x
		for i := range 3 {
			y = n.adainResBlk1d("predictor."+name+"."+itoa(i), y, s, i == 1)
		}
		y = n.conv1d("predictor."+name+"_proj", y, true, graph.ConvOpts{})
		return y.Reshape(1, -1)
	}
	return branch("F0"), branch("N")
}

// stage2 holds the prosody stage's outputs.
type stage2 struct {
	f0, n graph.Tensor // [1, 2F]
	asr   graph.Tensor // [1, 512, F]
}

// prosodyStage aligns the text-stage features to frames by repeating each
// phoneme's column dur[i] times (the 0/1 alignment matrix product of the
// reference, done as a gather) and predicts F0 and energy.
func (n *net) prosodyStage(d, tEn, dur, style graph.Tensor, frames int) stage2 {
	s := style.Slice(1, styleDim, 2*styleDim)
	en := d.RepeatInterleave(dur, 1, frames)    // [1, F, 640]
	asr := tEn.RepeatInterleave(dur, 2, frames) // [1, 512, F]
	f0, nrg := n.prosody(en, s)
	return stage2{f0: f0, n: nrg, asr: asr}
}
