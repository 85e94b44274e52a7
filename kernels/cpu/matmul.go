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
// once per backend and reused; with MatMulAttr.BF16, on a CPU with a
// bfloat16 unit, it is packed in bfloat16 and the product runs there
// (gemm.GemmBF16), the bias fused.
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
	if attr, _ := s.Attr.(kernels.MatMulAttr); attr.BF16 && !s.F32 && sharedB(bv) {
		if w := b.packedBF16B(bufs, bv, k, n, tb, ldb); w != nil {
			var bias []float32
			if len(s.In) >= 3 {
				bias = f32s(bufs, s.In[2])[s.In[2].Offset:][:n]
			}
			for i := 0; i < batch; i++ {
				co := out.Offset + i*m*n
				e.GemmBF16(ta, m, a[batchOffset(av, out.Shape, i):], lda, w, bias, c[co:co+m*n], n)
			}
			return nil
		}
	}
	var pb *gemm.PackedB
	if !e.UsesBLAS() && m > 1 && n > 1 && sharedB(bv) {
		pb = b.packedSGEMMB(bufs, bv, k, n, tb, ldb)
	}
	for i := 0; i < batch; i++ {
		ao, bo := batchOffset(av, out.Shape, i), batchOffset(bv, out.Shape, i)
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

// batchOffset returns where batch element i of the view v of a product
// with output shape out starts (the trailing two axes excluded).
func batchOffset(v kernels.View, out []int, i int) int {
	o := v.Offset
	for d := len(out) - 3; d >= 0; d-- {
		o += i % out[d] * v.Strides[d]
		i /= out[d]
	}
	return o
}

// sgemmKey identifies a constant GEMM B operand by where it lives, and
// whether it is packed in bfloat16.
type sgemmKey struct {
	data      uintptr
	off, k, n int
	ldb       int
	trans     bool
	bf16      bool
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
	src := f32s(bufs, bv)[bv.Offset:]
	diskKey := func(fileOff int64) string {
		return fmt.Sprintf("sgemmB %d %d %d %d %d %t", fileOff, bv.Offset, k, n, ldb, trans)
	}
	from := func(words []byte) (*gemm.PackedB, error) {
		return gemm.Default().PackedBFrom(trans, k, n, src, ldb, words)
	}
	pb, _ := keptPack(b, &b.gemmB, bb, key, diskKey, from, func() *gemm.PackedB {
		pb := gemm.Default().PackB(trans, k, n, src, ldb)
		releasePacked(src[:bSpan(k, n, trans, ldb)])
		return pb
	})
	return pb
}

// packedBF16B is packedSGEMMB for the bfloat16 GEMM: nil when B may change
// between launches or the CPU has no bfloat16 unit (the product then runs
// in float32).
func (b *Backend) packedBF16B(bufs []kernels.Buffer, bv kernels.View, k, n int, trans bool, ldb int) *gemm.BF16Weight {
	if gemm.BF16ConvPath() == "" {
		return nil
	}
	bb, ok := bufs[bv.Slot].(*buffer)
	if !ok || !bb.wrapped {
		return nil
	}
	key := sgemmKey{data: uintptr(unsafe.Pointer(unsafe.SliceData(bb.b))), off: bv.Offset, k: k, n: n, ldb: ldb, trans: trans, bf16: true}
	if w, ok := b.gemmB.Load(key); ok {
		return w.(*gemm.BF16Weight)
	}
	src := f32s(bufs, bv)[bv.Offset:]
	w := gemm.Default().PackBF16(trans, k, n, src, ldb)
	actual, _ := b.gemmB.LoadOrStore(key, w)
	releasePacked(src[:bSpan(k, n, trans, ldb)])
	return actual.(*gemm.BF16Weight)
}

// bSpan is the number of floats a k×n B operand with leading dimension
// ldb spans (its rows are B's columns when trans is set).
func bSpan(k, n int, trans bool, ldb int) int {
	if trans {
		return (n-1)*ldb + k
	}
	return (k-1)*ldb + n
}
