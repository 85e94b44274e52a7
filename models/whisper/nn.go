package whisper

import (
	"math"

	"github.com/tensorforge/forge/graph"
)

// layerNormEps is the epsilon of every LayerNorm in Whisper.
const layerNormEps = 1e-5

// maskValue is what the causal mask adds to the scores of future positions:
// the export's ConstantOfShape value (the lowest float32), which softmax
// turns into an exact zero without the NaN risk of −Inf.
const maskValue = -3.4028234663852886e38

// net builds graph pieces in one precision.
type net struct {
	g    *graph.Graph
	prec Precision
	// groups > 1 quantizes the leading axis of every Int8 activation in
	// that many parts (one per hypothesis), so a hypothesis's arithmetic
	// never depends on the others in the batch.
	groups int
	// rowwise marks graphs with a few rows per product (decoder steps),
	// where streaming the weights dominates: F32 then reads each weight as
	// bytes and dequantizes on the fly (LinearQ) instead of reading a
	// float32 copy four times the size. The arithmetic is the same up to
	// float32 rounding.
	rowwise bool
}

// linear applies l to x [..., in], giving [..., out].
//
// In Int8 it follows the export's node order exactly:
//
//	xq, sx, zx = DynamicQuantizeLinear(x)
//	y = Cast(MatMulInteger(xq, W, zx, zw)) · (sx·sw) + bias
func (n net) linear(x graph.Tensor, l *linear) graph.Tensor {
	g := n.g
	var bias graph.Tensor
	if l.bias.data != nil {
		bias = l.bias.in(g)
	}
	if n.prec == F32 {
		if n.rowwise {
			y := x.LinearQ(l.w.q.in(g), l.w.scale.in(g), l.w.zero.in(g))
			if l.bias.data != nil {
				y = y.Add(bias)
			}
			return y
		}
		return x.Linear(l.w.dequantized(g), bias)
	}
	shape := x.Shape().Clone()
	out := l.w.q.shape[0]
	parts := []graph.Tensor{x}
	if n.groups > 1 && x.Rank() > 1 && x.Dim(0) == n.groups {
		parts = x.Chunk(0, n.groups)
	}
	ys := make([]graph.Tensor, len(parts))
	for i, p := range parts {
		p = p.Reshape(-1, p.Dim(-1))
		q, sx, zx := p.DynamicQuantize()
		y := q.MatMulInteger(l.w.q.in(g).T(), zx, l.w.zero.in(g)).Cast(graph.F32)
		y = y.Mul(sx.Mul(l.w.scale.in(g)))
		if l.bias.data != nil {
			y = bias.Add(y)
		}
		ys[i] = y
	}
	y := ys[0]
	if len(ys) > 1 {
		y = graph.Concat(0, ys...)
	}
	shape[len(shape)-1] = out
	return y.Reshape(shape...)
}

// conv applies c to x [1, in, L] with kernel 3, padding 1 and the given
// stride; Int8 mirrors ConvInteger as linear mirrors MatMulInteger.
func (n net) conv(x graph.Tensor, c *conv, stride int) graph.Tensor {
	g := n.g
	opts := graph.ConvOpts{Stride: stride, Padding: 1}
	bias := c.bias.in(g)
	if n.prec == F32 {
		return x.Conv1d(c.w.dequantized(g), bias, opts)
	}
	q, sx, zx := x.DynamicQuantize()
	y := q.ConvInteger1d(c.w.q.in(g), zx, c.w.zero.in(g), opts).Cast(graph.F32)
	y = y.Mul(sx.Mul(c.w.scale.in(g)))
	return y.Add(bias.Reshape(-1, 1))
}

// qkv returns the attention's query (scaled by scale, as the export scales
// it after the bias), key and value projections of x. F32 with many rows
// runs them as one product on the concatenated weight, with the scale
// folded into the query's weight and bias (exact: it is a power of two);
// both are weight-only, so the engine builds them once. Int8 and the
// decoder's single rows keep the three products.
func (n net) qkv(x graph.Tensor, a *attention, scale float64) (q, k, v graph.Tensor) {
	if n.prec != F32 || n.rowwise || scale != math.Exp2(math.Round(math.Log2(scale))) {
		return n.linear(x, &a.q).MulScalar(scale), n.linear(x, &a.k), n.linear(x, &a.v)
	}
	g := n.g
	d := a.q.w.q.shape[0]
	w := graph.Concat(0, a.q.w.dequantized(g).MulScalar(scale), a.k.w.dequantized(g), a.v.w.dequantized(g))
	b := graph.Concat(0, a.q.bias.in(g).MulScalar(scale), g.Full(0, graph.F32, graph.Shape{d}), a.v.bias.in(g))
	y := x.Linear(w, b)
	return y.Slice(-1, 0, d), y.Slice(-1, d, 2*d), y.Slice(-1, 2*d, 3*d)
}

// layerNorm normalises the last axis. Int8 writes it out as the export
// does (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add): the
// requantization after it turns last-bit differences into different
// integers, so the mode that must reproduce onnxruntime follows the graph's
// own arithmetic; F32 uses the fused kernel.
func (n net) layerNorm(x graph.Tensor, p *norm) graph.Tensor {
	w, b := p.w.in(n.g), p.b.in(n.g)
	if n.prec == F32 {
		return x.LayerNorm(w, b, layerNormEps)
	}
	d := x.Sub(x.Mean(true, -1))
	std := d.Mul(d).Mean(true, -1).AddScalar(layerNormEps).Sqrt() // Pow(d, 2): the same correctly rounded square
	return d.Div(std).Mul(w).Add(b)
}

// sqrt2 is the export's float32 constant for √2 in GELU.
const sqrt2 = float32(1.4142135)

// gelu is the erf GELU; Int8 writes it out as the export does:
// (x · (erf(x / 1.4142135) + 1)) · 0.5.
func (n net) gelu(x graph.Tensor) graph.Tensor {
	if n.prec == F32 {
		return x.Gelu()
	}
	return x.Mul(x.Div(n.g.Scalar(float64(sqrt2), graph.F32)).Erf().AddScalar(1)).MulScalar(0.5)
}

// mlp is fc2(GELU(fc1(x))).
func (n net) mlp(x graph.Tensor, fc1, fc2 *linear) graph.Tensor {
	return n.linear(n.gelu(n.linear(x, fc1)), fc2)
}

// splitHeads views x [..., s, heads·dh] as [..., heads, s, dh] (strided, no
// copy: the matrix products read each head in place).
func splitHeads(x graph.Tensor, heads int) graph.Tensor {
	r := x.Rank()
	s, d := x.Dim(-2), x.Dim(-1)
	shape := append(x.Shape()[:r-2].Clone(), s, heads, d/heads)
	perm := make([]int, 0, r+1)
	for i := range r - 2 {
		perm = append(perm, i)
	}
	perm = append(perm, r-1, r-2, r)
	return x.Reshape(shape...).Permute(perm...)
}

// mergeHeads turns [..., heads, s, dh] back into [..., s, heads·dh].
func mergeHeads(x graph.Tensor) graph.Tensor {
	r := x.Rank()
	perm := make([]int, 0, r)
	for i := range r - 3 {
		perm = append(perm, i)
	}
	perm = append(perm, r-2, r-3, r-1)
	y := x.Permute(perm...)
	shape := append(y.Shape()[:r-2].Clone(), x.Dim(-3)*x.Dim(-1))
	return y.Reshape(shape...)
}

// attend is scaled dot-product attention on split heads: softmax(q·kᵀ +
// mask)·v, with q [..., n, dh] already scaled by dh^-½ (as the export does,
// after the projection's bias), k [..., s, dh] and v [..., s, dh] (views
// are read in place). mask may be the zero Tensor. One fused kernel: the
// score matrix never leaves the cache.
func attend(q, k, v, mask graph.Tensor) graph.Tensor {
	return q.Attention(k, v, mask)
}

// headScale is dh^-½: 0.125 for Whisper's heads of 64.
func headScale(dh int) float64 { return 1 / math.Sqrt(float64(dh)) }
