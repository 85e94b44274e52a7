package cpu

import (
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// gemmRowsQ8 is the fewest rows of x for which a float32 OpLinearQ runs as
// a blocked GEMM whose B slivers are dequantized from the bytes as they are
// packed (gemm.SGEMMQ8) rather than as dot products that read the weight
// once for every row (gemm.LinearQ8). On the 2-core EPYC (tiny's MLP,
// 1536×384) the GEMM is faster from about 32 rows (64 rows: 0.83 vs
// 1.67 ms; 600: 6.6 vs 15.5 ms, within 2 % of the GEMM on a float32 weight
// packed beforehand); the bound is set a little above, so that a decoder
// step of a batch of up to 47 hypotheses keeps the arithmetic of a single
// one. The two sum in different orders, and LinearQ8 scales after the sum,
// so the results differ by float32 rounding.
const gemmRowsQ8 = 48

// linearQ implements OpLinearQ: dense x [M, K] times a byte weight w
// [N, K] dequantized on the fly, (w − zero)·scale, transposed; with
// LinearQAttr.Int16, x's rows rounded to 16 bits and summed in integers
// where the CPU has the unit (gemm.LinearQ8Int16); in float32 with
// gemmRowsQ8 rows or more, as the GEMM on the dequantized weight (bit for
// bit), without keeping it.
func (b *Backend) linearQ(s *kernels.Step, bufs []kernels.Buffer) error {
	xv, wv, sv, zv, out := s.In[0], s.In[1], s.In[2], s.In[3], s.Out[0]
	m, k := xv.Shape[0], xv.Shape[1]
	n := wv.Shape[0]
	signed := wv.DType == kernels.I8
	var zero int32
	if signed {
		zero = int32(zeroPointsS8(bufs, zv)[0])
	} else {
		zero = int32(zeroPointsU8(bufs, zv)[0])
	}
	x := f32s(bufs, xv)[xv.Offset:]
	w := bytesOf(bufs, wv)[wv.Offset:]
	c := f32s(bufs, out)[out.Offset:]
	scale := f32s(bufs, sv)[sv.Offset]
	if a, ok := s.Attr.(kernels.LinearQAttr); ok && a.Int16 {
		gemm.LinearQ8Int16(m, n, k, x, k, w, k, signed, zero, scale, c, n)
		return nil
	}
	if m >= gemmRowsQ8 {
		gemm.Default().SGEMMQ8(m, n, k, x, k, w, k, signed, zero, scale, c, n)
		return nil
	}
	gemm.LinearQ8(m, n, k, x, k, w, k, signed, zero, scale, c, n)
	return nil
}
