package whisper

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// int8Arith follows the export's graph node for node: each quantized
// product quantizes its activation per tensor (DynamicQuantizeLinear),
// multiplies in integers (MatMulInteger, ConvInteger), casts the int32
// result to float and scales it by scale_x·scale_w; LayerNorm and GELU are
// written out as the export writes them, because the requantization after
// them turns last-bit differences into different integers.
type int8Arith struct {
	// groups > 1 quantizes the leading axis of every activation in that
	// many parts (one per hypothesis), so a hypothesis's arithmetic never
	// depends on the others in the batch.
	groups int
	g      *graph.Graph
}

// linear is
//
//	xq, sx, zx = DynamicQuantizeLinear(x)
//	y = Cast(MatMulInteger(xq, W, zx, zw)) · (sx·sw) + bias
func (a int8Arith) linear(x graph.Tensor, l *linear) graph.Tensor {
	g := a.g
	bias := l.biasIn(g)
	shape := x.Shape().Clone()
	out := l.w.Q.Shape[0]
	parts := []graph.Tensor{x}
	if a.groups > 1 && x.Rank() > 1 && x.Dim(0) == a.groups {
		parts = x.Chunk(0, a.groups)
	}
	ys := make([]graph.Tensor, len(parts))
	for i, p := range parts {
		p = p.Reshape(-1, p.Dim(-1))
		q, sx, zx := p.DynamicQuantize()
		y := q.MatMulInteger(l.w.Q.In(g).T(), zx, l.w.Zero.In(g)).Cast(graph.F32)
		y = y.Mul(sx.Mul(l.w.Scale.In(g)))
		if l.bias.Valid() {
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

// conv mirrors ConvInteger as linear mirrors MatMulInteger.
func (a int8Arith) conv(x graph.Tensor, c *conv, stride int) graph.Tensor {
	g := a.g
	opts := graph.ConvOpts{Stride: stride, Padding: 1}
	bias := c.bias.In(g)
	q, sx, zx := x.DynamicQuantize()
	y := q.ConvInteger1d(c.w.Q.In(g), zx, c.w.Zero.In(g), opts).Cast(graph.F32)
	y = y.Mul(sx.Mul(c.w.Scale.In(g)))
	return y.Add(bias.Reshape(-1, 1))
}

// layerNorm is ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
func (a int8Arith) layerNorm(x graph.Tensor, n *layerNorm) graph.Tensor {
	w, b := n.w.In(a.g), n.b.In(a.g)
	d := x.Sub(x.Mean(true, -1))
	std := d.Mul(d).Mean(true, -1).AddScalar(layerNormEps).Sqrt() // Pow(d, 2): the same correctly rounded square
	return d.Div(std).Mul(w).Add(b)
}

// sqrt2 is the export's float32 constant for √2 in GELU.
const sqrt2 = float32(1.4142135)

// gelu is (x · (erf(x / 1.4142135) + 1)) · 0.5.
func (a int8Arith) gelu(x graph.Tensor) graph.Tensor {
	return x.Mul(x.Div(a.g.Scalar(float64(sqrt2), graph.F32)).Erf().AddScalar(1)).MulScalar(0.5)
}

func (a int8Arith) qkv(x graph.Tensor, at *attention, scale float64) (q, k, v graph.Tensor) {
	return separateQKV(a, x, at, scale)
}

// crossKV is one product per projection on the once-quantized h.
func (a int8Arith) crossKV(h graph.Tensor, cross []*attention, use func(layer int, k, v graph.Tensor)) {
	for i, at := range cross {
		use(i, a.linear(h, &at.k), a.linear(h, &at.v))
	}
}

// mlpRows is 0: the export quantizes each activation as a whole, so a
// block of rows would quantize differently.
func (a int8Arith) mlpRows() int { return 0 }

// logits is the export's float MatMul on the dequantized table, which
// LinearQ computes reading the table as bytes.
func (a int8Arith) logits(x graph.Tensor, e *param.Quantized) graph.Tensor {
	g := a.g
	return x.LinearQ(e.Q.In(g), e.Scale.In(g), e.Zero.In(g))
}
