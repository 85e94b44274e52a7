package cpu

import (
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// linearQ implements OpLinearQ: dense x [M, K] times a byte weight w
// [N, K] dequantized on the fly, (w − zero)·scale, transposed; with
// LinearQAttr.Int16, x's rows rounded to 16 bits and summed in integers
// where the CPU has the unit (gemm.LinearQ8Int16).
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
	gemm.LinearQ8(m, n, k, x, k, w, k, signed, zero, scale, c, n)
	return nil
}
