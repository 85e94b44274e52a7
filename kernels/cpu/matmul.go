package cpu

import (
	"fmt"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// matmul implements OpMatMul: one GEMM per batch element (the GEMM itself
// is multi-threaded). On the Go GEMM path a constant B (a weight) is packed
// once per backend and reused.
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
		addBias(s, bufs, c[out.Offset:out.Offset+batch*m*n], n)
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
	e := gemm.Default()
	var pb *gemm.PackedB
	if !e.UsesBLAS() && m > 1 && n > 1 && sharedB(bv) {
		pb = b.packedSGEMMB(bufs, bv, k, n, tb, ldb)
	}
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
		if pb != nil {
			e.SGEMMPackedB(ta, m, a[ao:], lda, pb, c[co:co+m*n], n)
			continue
		}
		e.SGEMM(ta, tb, m, n, k, 1, a[ao:], lda, bb[bo:], ldb, 0, c[co:co+m*n], n)
	}
	addBias(s, bufs, c[out.Offset:out.Offset+batch*m*n], n)
	return nil
}

// addBias adds OpMatMul's optional bias (In[2], [n]) to every row of c.
func addBias(s *kernels.Step, bufs []kernels.Buffer, c []float32, n int) {
	if len(s.In) < 3 {
		return
	}
	bv := s.In[2]
	bias := f32s(bufs, bv)[bv.Offset : bv.Offset+n]
	for r := 0; r+n <= len(c); r += n {
		vmath.Add(c[r:r+n], c[r:r+n], bias)
	}
}

// sharedB reports whether every batch element reads the same B matrix (a
// weight): B has no batch axes or only broadcast (stride 0) ones.
func sharedB(bv kernels.View) bool {
	for d := 0; d < len(bv.Shape)-2; d++ {
		if bv.Shape[d] != 1 && bv.Strides[d] != 0 {
			return false
		}
	}
	return true
}

// sgemmKey identifies a constant GEMM B operand by where it lives.
type sgemmKey struct {
	data      uintptr
	off, k, n int
	ldb       int
	trans     bool
}

// packedSGEMMB returns a B operand that lives in read-only (wrapped)
// memory packed for the Go GEMM, packing it on first use; nil when B may
// change between launches.
func (b *Backend) packedSGEMMB(bufs []kernels.Buffer, bv kernels.View, k, n int, trans bool, ldb int) *gemm.PackedB {
	bb, ok := bufs[bv.Slot].(*buffer)
	if !ok || !bb.wrapped {
		return nil
	}
	key := sgemmKey{data: uintptr(unsafe.Pointer(unsafe.SliceData(bb.b))), off: bv.Offset, k: k, n: n, ldb: ldb, trans: trans}
	if pb, ok := b.gemmB.Load(key); ok {
		return pb.(*gemm.PackedB)
	}
	pb := gemm.Default().PackB(trans, k, n, f32s(bufs, bv)[bv.Offset:], ldb)
	actual, _ := b.gemmB.LoadOrStore(key, pb)
	return actual.(*gemm.PackedB)
}
