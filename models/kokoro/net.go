package kokoro

import (
	"fmt"

	"github.com/tensorforge/forge/graph"
)

// net builds one of Kokoro's graphs: it hands the module code its weights
// as graph parameters (by reference, never copied) and remembers the first
// weight that was missing, so that a bad artifact is reported by name.
type net struct {
	g    *graph.Graph
	w    *Weights
	err  error
	bf16 bool // convolutions may run in bfloat16 (see Model.Float32)
}

func newNet(w *Weights) *net { return &net{g: graph.New(), w: w} }

// p returns the parameter called name.
func (n *net) p(name string) graph.Tensor {
	t, ok := n.w.lookup(name)
	if !ok {
		if n.err == nil {
			n.err = fmt.Errorf("kokoro: weights %s lack tensor %q", n.w.ID, name)
		}
		// A zero-byte parameter fails shape checking, so the graph carries
		// an error from here on; Err reports the clearer message above.
		return n.g.Param(name, graph.F32, graph.Shape{1}, nil)
	}
	return n.g.ParamF32(name, graph.Shape(t.shape), t.data)
}

// check returns the first error met while building: a missing weight or an
// invalid op among the outputs.
func (n *net) check(outs ...graph.Tensor) error {
	if n.err != nil {
		return n.err
	}
	for _, t := range outs {
		if err := t.Err(); err != nil {
			return fmt.Errorf("kokoro: building graph: %w", err)
		}
	}
	return nil
}

// linear is nn.Linear: x·Wᵀ + b.
func (n *net) linear(prefix string, x graph.Tensor) graph.Tensor {
	return x.Linear(n.p(prefix+".weight"), n.p(prefix+".bias"))
}

// conv1d is nn.Conv1d with the folded (weight-normalised) weight; bias is
// optional (conv1x1 shortcuts have none). In a bf16 net it lets the
// backend round the operands to bfloat16.
func (n *net) conv1d(prefix string, x graph.Tensor, bias bool, o graph.ConvOpts) graph.Tensor {
	var b graph.Tensor
	if bias {
		b = n.p(prefix + ".bias")
	}
	o.BF16 = n.bf16
	return x.Conv1d(n.p(prefix+".weight"), b, o)
}

// convTranspose1d is nn.ConvTranspose1d with bias (bfloat16 allowed in a
// bf16 net, as conv1d).
func (n *net) convTranspose1d(prefix string, x graph.Tensor, o graph.ConvOpts) graph.Tensor {
	o.BF16 = n.bf16
	return x.ConvTranspose1d(n.p(prefix+".weight"), n.p(prefix+".bias"), o)
}

// lstm is a bidirectional single-layer nn.LSTM(batch_first=True) on x
// [1, T, I], returning [1, T, 2H].
func (n *net) lstm(prefix string, x graph.Tensor) graph.Tensor {
	dir := func(suffix string) graph.LSTMWeights {
		return graph.LSTMWeights{
			WIH: n.p(prefix + ".weight_ih_l0" + suffix),
			WHH: n.p(prefix + ".weight_hh_l0" + suffix),
			BIH: n.p(prefix + ".bias_ih_l0" + suffix),
			BHH: n.p(prefix + ".bias_hh_l0" + suffix),
		}
	}
	bw := dir("_reverse")
	y, _, _ := x.LSTM(dir(""), &bw, graph.Tensor{}, graph.Tensor{}, true)
	return y
}

// scalar is a 0-d f32 constant of the graph.
func (n *net) scalar(v float64) graph.Tensor { return n.g.Scalar(v, graph.F32) }
