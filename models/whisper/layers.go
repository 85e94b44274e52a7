package whisper

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// The PyTorch layers Whisper's modules are made of, as the int8 artifact
// stores them: every matrix is 8-bit with a per-tensor scale and zero
// point. A layer holds its weights; how a graph computes it (float32 on
// the dequantized weight, or the export's integer arithmetic) is the
// arith's business (arith.go), so the modules read the same in both
// precisions.

// linear is nn.Linear: weight [out, in] (PyTorch layout) and an optional
// bias [out] (the zero Tensor when the layer has none: k_proj).
type linear struct {
	w    param.Quantized
	bias param.Tensor
}

func newLinear(s *param.Scope, out, in int, bias bool) linear {
	l := linear{w: s.Quantized("weight", out, in)}
	if bias {
		l.bias = s.F32("bias", out)
	}
	return l
}

// conv is nn.Conv1d with kernel 3 and padding 1: weight [out, in, 3],
// bias [out].
type conv struct {
	w    param.Quantized
	bias param.Tensor
}

func newConv(s *param.Scope, out, in int) conv {
	return conv{w: s.Quantized("weight", out, in, 3), bias: s.F32("bias", out)}
}

// layerNorm is nn.LayerNorm's affine parameters (epsilon layerNormEps).
type layerNorm struct{ w, b param.Tensor }

func newLayerNorm(s *param.Scope, d int) layerNorm {
	return layerNorm{w: s.F32("weight", d), b: s.F32("bias", d)}
}

// layerNormEps is the epsilon of every LayerNorm in Whisper.
const layerNormEps = 1e-5

// mlp is the feed-forward half of an encoder or decoder layer, which
// Hugging Face writes inline in both: final_layer_norm, fc1, GELU, fc2,
// added to the input.
type mlp struct {
	ln       layerNorm // final_layer_norm
	fc1, fc2 linear
}

func newMLP(s *param.Scope, d, ffn int) mlp {
	return mlp{ln: newLayerNorm(s.Sub("final_layer_norm"), d), fc1: newLinear(s.Sub("fc1"), ffn, d, true), fc2: newLinear(s.Sub("fc2"), d, ffn, true)}
}

func (m *mlp) forward(a arith, x graph.Tensor) graph.Tensor {
	hidden := func(x graph.Tensor) graph.Tensor {
		return a.linear(a.gelu(a.linear(a.layerNorm(x, &m.ln), &m.fc1)), &m.fc2)
	}
	n, most := x.Dim(-2), a.mlpRows()
	if most == 0 || n <= most {
		return x.Add(hidden(x))
	}
	// Every row is computed on its own, so in blocks of rows the values
	// are the same; only the hidden layer of one block is held at a time.
	var parts []graph.Tensor
	for r := 0; r < n; r += most {
		parts = append(parts, hidden(x.Slice(-2, r, min(n, r+most))))
	}
	return x.Add(graph.Concat(-2, parts...))
}

// biasIn adds the bias to g, or returns the zero Tensor for a layer
// without one.
func (l *linear) biasIn(g *graph.Graph) graph.Tensor {
	if !l.bias.Valid() {
		return graph.Tensor{}
	}
	return l.bias.In(g)
}
