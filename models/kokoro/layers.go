package kokoro

import (
	"fmt"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// The PyTorch layers Kokoro's modules are made of. Each reads its weights
// from its scope in a constructor and adds them to the graph in forward.
// Kokoro's widths are whatever the weights hold (−1 in the shapes), so
// each layer checks its tensors against each other: a bias as wide as its
// weight's outputs, an LSTM's four gates.

// dim returns axis i of t's shape, or −1 for a tensor that failed to read
// (the scope reports why).
func dim(t param.Tensor, i int) int {
	if !t.Valid() {
		return -1
	}
	return t.Shape[i]
}

// linear is nn.Linear: x·Wᵀ + b.
type linear struct{ w, b param.Tensor }

func newLinear(s *param.Scope) linear {
	w := s.F32("weight", -1, -1)
	return linear{w: w, b: s.F32("bias", dim(w, 0))}
}

func (l *linear) forward(x graph.Tensor) graph.Tensor {
	g := x.Graph()
	return x.Linear(l.w.In(g), l.b.In(g))
}

// conv1d is nn.Conv1d with the folded (weight-normalised) weight. The bias
// is optional (conv1x1 shortcuts have none, and AdaINResBlock1 leaves
// convs1's out). bf16 lets the backend round the operands to bfloat16 or
// run the convolution by Winograd's minimal filtering (see Model.Float32).
type conv1d struct {
	w, b param.Tensor // b: the zero Tensor without a bias
	opts graph.ConvOpts
}

func newConv1d(s *param.Scope, bias bool, opts graph.ConvOpts, bf16 bool) conv1d {
	c := conv1d{w: s.F32("weight", -1, -1, -1), opts: opts}
	if bias {
		c.b = s.F32("bias", dim(c.w, 0))
	}
	c.opts.BF16 = bf16
	c.opts.Winograd = bf16
	return c
}

func (c *conv1d) forward(x graph.Tensor) graph.Tensor {
	g := x.Graph()
	var b graph.Tensor
	if c.b.Valid() {
		b = c.b.In(g)
	}
	return x.Conv1d(c.w.In(g), b, c.opts)
}

// convTranspose1d is nn.ConvTranspose1d with bias: weight [in, out/groups,
// k], bias [out].
type convTranspose1d struct {
	w, b param.Tensor
	opts graph.ConvOpts
}

func newConvTranspose1d(s *param.Scope, opts graph.ConvOpts, bf16 bool) convTranspose1d {
	w := s.F32("weight", -1, -1, -1)
	out := dim(w, 1)
	if out > 0 && opts.Groups > 1 {
		out *= opts.Groups
	}
	opts.BF16 = bf16
	return convTranspose1d{w: w, b: s.F32("bias", out), opts: opts}
}

func (c *convTranspose1d) forward(x graph.Tensor) graph.Tensor {
	g := x.Graph()
	return x.ConvTranspose1d(c.w.In(g), c.b.In(g), c.opts)
}

// lstmDir is one direction of an nn.LSTM layer (gates i, f, g, o).
type lstmDir struct{ wih, whh, bih, bhh param.Tensor }

func newLSTMDir(s *param.Scope, suffix string) lstmDir {
	whh := s.F32("weight_hh_l0"+suffix, -1, -1)
	h4 := dim(whh, 0)
	return lstmDir{
		wih: s.F32("weight_ih_l0"+suffix, h4, -1), whh: whh,
		bih: s.F32("bias_ih_l0"+suffix, h4), bhh: s.F32("bias_hh_l0"+suffix, h4),
	}
}

func (d *lstmDir) in(g *graph.Graph) graph.LSTMWeights {
	return graph.LSTMWeights{WIH: d.wih.In(g), WHH: d.whh.In(g), BIH: d.bih.In(g), BHH: d.bhh.In(g)}
}

// lstm is a bidirectional single-layer nn.LSTM(batch_first=True).
type lstm struct{ fw, bw lstmDir }

func newLSTM(s *param.Scope) lstm {
	return lstm{fw: newLSTMDir(s, ""), bw: newLSTMDir(s, "_reverse")}
}

// forward runs x [1, T, I] both ways and returns [1, T, 2H].
func (l *lstm) forward(x graph.Tensor) graph.Tensor {
	g := x.Graph()
	bw := l.bw.in(g)
	y, _, _ := x.LSTM(l.fw.in(g), &bw, graph.Tensor{}, graph.Tensor{}, true)
	return y
}

// layerNorm is an affine LayerNorm over the last axis (nn.LayerNorm's
// weight and bias, or Kokoro's own LayerNorm's gamma and beta).
type layerNorm struct {
	w, b param.Tensor
	eps  float64
}

func newLayerNorm(s *param.Scope, weight, bias string, eps float64) layerNorm {
	w := s.F32(weight, -1)
	return layerNorm{w: w, b: s.F32(bias, dim(w, 0)), eps: eps}
}

func (n *layerNorm) forward(x graph.Tensor) graph.Tensor {
	g := x.Graph()
	return x.LayerNorm(n.w.In(g), n.b.In(g), n.eps)
}

// scalar is a 0-d f32 constant of x's graph.
func scalar(x graph.Tensor, v float64) graph.Tensor { return x.Graph().Scalar(v, graph.F32) }

// check returns the first invalid op among a graph's outputs.
func check(outs ...graph.Tensor) error {
	for _, t := range outs {
		if err := t.Err(); err != nil {
			return fmt.Errorf("kokoro: building graph: %w", err)
		}
	}
	return nil
}
