package whisper

import (
	"math"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// f32Arith runs float32 activations, with fused kernels, on weights
// dequantized once (a weight-only subgraph the engine folds and caches) or,
// where the backend packs byte weights as it multiplies (bytes), read as
// bytes by every product.
type f32Arith struct {
	g *graph.Graph
	// rowwise marks graphs with a few rows per product (decoder steps),
	// where streaming the weights dominates: each product reads its weight
	// as bytes and dequantizes on the fly (LinearQ) instead of reading a
	// float32 copy four times the size. The arithmetic is the same up to
	// float32 rounding.
	rowwise bool
	// bytes makes the products of many rows read their weights as bytes
	// too (LinearQ), on a backend that packs a byte weight as it
	// multiplies (the CPU: gemm.SGEMMQ8): no float32 copy of a weight is
	// folded and kept, which was most of the process's memory (Whisper
	// base: 87 MB of folded weights plus 72 MB of their packed copies),
	// for the same sums (the packed values are the dequantized ones) at a
	// few per cent more time per product. The attention's projections and
	// the cross-attention keys and values then run as separate products,
	// since each weight has a scale of its own.
	bytes bool
	// bf16 lets the products of many rows round their operands to
	// bfloat16 where the backend has bfloat16 units, and rowwise products
	// round their rows to 16-bit fixed point where it has 8-bit
	// dot-product units (the bf16 arithmetic, bf16.go).
	bf16 bool
}

// mm returns the options of the arithmetic's many-row products.
func (a f32Arith) mm() graph.MatMulOpts { return graph.MatMulOpts{BF16: a.bf16} }

// q8 returns the options of the products that read a weight as bytes.
func (a f32Arith) q8() graph.LinearQOpts { return graph.LinearQOpts{Int16: a.bf16 && a.rowwise} }

func (a f32Arith) linear(x graph.Tensor, l *linear) graph.Tensor {
	g := a.g
	bias := l.biasIn(g)
	if a.rowwise || a.bytes {
		y := x.LinearQWith(l.w.Q.In(g), l.w.Scale.In(g), l.w.Zero.In(g), a.q8())
		if l.bias.Valid() {
			y = y.Add(bias)
		}
		return y
	}
	return x.LinearWith(l.w.Dequantized(g), bias, a.mm())
}

func (a f32Arith) conv(x graph.Tensor, c *conv, stride int) graph.Tensor {
	bias := c.bias.In(a.g)
	return x.Conv1d(c.w.Dequantized(a.g), bias, graph.ConvOpts{Stride: stride, Padding: 1, BF16: a.bf16})
}

func (a f32Arith) layerNorm(x graph.Tensor, n *layerNorm) graph.Tensor {
	return x.LayerNorm(n.w.In(a.g), n.b.In(a.g), layerNormEps)
}

func (a f32Arith) gelu(x graph.Tensor) graph.Tensor { return x.Gelu() }

// qkv runs the three projections as one product on the concatenated
// weight when there are many rows, with the scale folded into the query's
// weight and bias (exact: it is a power of two); both are weight-only, so
// the engine builds them once.
func (a f32Arith) qkv(x graph.Tensor, at *attention, scale float64) (q, k, v graph.Tensor) {
	if a.rowwise || a.bytes || scale != math.Exp2(math.Round(math.Log2(scale))) {
		return separateQKV(a, x, at, scale)
	}
	g := a.g
	d := at.q.w.Q.Shape[0]
	w := graph.Concat(0, at.q.w.Dequantized(g).MulScalar(scale), at.k.w.Dequantized(g), at.v.w.Dequantized(g))
	b := graph.Concat(0, at.q.bias.In(g).MulScalar(scale), g.Full(0, graph.F32, graph.Shape{d}), at.v.bias.In(g))
	y := x.LinearWith(w, b, a.mm())
	return y.Slice(-1, 0, d), y.Slice(-1, d, 2*d), y.Slice(-1, 2*d, 3*d)
}

// crossKV runs every layer's cross-attention key and value projections as
// one product on the concatenated weights (built once per engine), or,
// reading the weights as bytes, as a product per projection.
func (a f32Arith) crossKV(h graph.Tensor, cross []*attention, use func(layer int, k, v graph.Tensor)) {
	if a.bytes {
		for i, at := range cross {
			use(i, a.linear(h, &at.k), a.linear(h, &at.v))
		}
		return
	}
	g := a.g
	d := h.Dim(-1)
	var ws, bs []graph.Tensor
	for _, at := range cross {
		ws = append(ws, at.k.w.Dequantized(g), at.v.w.Dequantized(g))
		bs = append(bs, g.Full(0, graph.F32, graph.Shape{d}), at.v.bias.In(g)) // k_proj has no bias
	}
	y := h.LinearWith(graph.Concat(0, ws...), graph.Concat(0, bs...), a.mm())
	for i := range cross {
		use(i, y.Slice(-1, 2*i*d, (2*i+1)*d), y.Slice(-1, (2*i+1)*d, (2*i+2)*d))
	}
}

// mlpRowsBytes is how many rows an MLP computes at once when its products
// read the weights as bytes (the CPU): half a 30-s window, so that the
// silence tail's pass (1500 rows) needs no more memory than a window of
// 15 s. Tiny's pass held fc1's output and its GELU, 2 × 9.2 MB, in its
// 20.7 MB arena; base's 2 × 12.3 MB in 27.6 MB. Windows of 15 s or less
// are computed whole; a longer one packs each MLP weight once more.
const mlpRowsBytes = 750

func (a f32Arith) mlpRows() int {
	if a.bytes {
		return mlpRowsBytes
	}
	return 0
}

// logits reads the embedding as bytes with any number of rows: the
// float32 table would be four times the bytes (80 MB for tiny), kept for
// every engine.
func (a f32Arith) logits(x graph.Tensor, e *param.Quantized) graph.Tensor {
	g := a.g
	return x.LinearQWith(e.Q.In(g), e.Scale.In(g), e.Zero.In(g), a.q8())
}
