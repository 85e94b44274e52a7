package cpu

import (
	"fmt"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// matmul implements OpMatMul: one GEMM per batch element (the GEMM itself
// is multi-threaded).
func (b *Backend) matmul(s *kernels.Step, bufs []kernels.Buffer) error {
	av, bv, out := s.In[0], s.In[1], s.Out[0]
	r := len(out.Shape)
	m, n := out.Shape[r-2], out.Shape[r-1]
	k := av.Shape[len(av.Shape)-1]
	batch := 1
	for _, d := range out.Shape[:r-2] {
		batch *= d
	}
	if m*n*batch == 0 {
		return nil
	}
	c := f32s(bufs, out)
	if k == 0 {
		clear(c[out.Offset : out.Offset+batch*m*n])
		return nil
	}
	ta, lda, err := kernels.GemmLayout(av)
	if err != nil {
		return fmt.Errorf("cpu: matmul operand a: %w", err)
	}
	tb, ldb, err := kernels.GemmLayout(bv)
	if err != nil {
		return fmt.Errorf("cpu: matmul operand b: %w", err)
	}
	a, bb := f32s(bufs, av), f32s(bufs, bv)
	for i := 0; i < batch; i++ {
		ao, bo := av.Offset, bv.Offset
		rem := i
		for d := r - 3; d >= 0; d-- {
			idx := rem % out.Shape[d]
			rem /= out.Shape[d]
			ao += idx * av.Strides[d]
			bo += idx * bv.Strides[d]
		}
		co := out.Offset + i*m*n
		gemm.SGEMM(ta, tb, m, n, k, 1, a[ao:], lda, bb[bo:], ldb, 0, c[co:co+m*n], n)
	}
	return nil
}
