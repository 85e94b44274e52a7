package cuda

import (
	"fmt"
	"sync"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cuda/cublaslt"
	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// gemm runs OpMatMul through cuBLASLt: float32, or with the backend's half
// precision the operands rounded to f16/bf16 (weights once, activations per
// product in the queue's workspace) and accumulated in float32.
type gemm struct {
	b         *Backend
	h         *cublaslt.Handle
	workspace int

	mu   sync.Mutex
	half map[string]*derived // half-precision and dequantized copies of constant operands
}

// derived is a copy made from constant operands, and where they lie: when
// one of them is freed (the engine frees a constant that no plan holds),
// the copy goes too, or a new constant at the same address would be read
// through the old one's copy.
type derived struct {
	buf  *buffer
	srcs []driver.DevicePtr
}

// forget drops the copies made from memory in [lo, hi) and returns them
// for freeing.
func (g *gemm) forget(lo, hi driver.DevicePtr) []*buffer {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*buffer
	for k, d := range g.half {
		for _, p := range d.srcs {
			if p >= lo && p < hi {
				out = append(out, d.buf)
				delete(g.half, k)
				break
			}
		}
	}
	return out
}

// newGemm opens cuBLASLt; without the library (an unusual install) matrix
// products fall back to the host.
func newGemm(b *Backend) (*gemm, error) {
	lib, err := cublaslt.Load()
	if err != nil {
		return nil, nil
	}
	g := &gemm{b: b, workspace: cublaslt.RecommendedWorkspace, half: map[string]*derived{}}
	if err := b.th.Do(func() error {
		var err error
		g.h, err = lib.NewHandle()
		return err
	}); err != nil {
		return nil, fmt.Errorf("cuda: cuBLASLt: %w", err)
	}
	return g, nil
}

// warm runs one small product of each input type the backend uses (f32,
// and f16 or bf16 with half-precision products): a process's first
// cuBLASLt product starts the library (the first heuristic query took
// ~0.1 s on the H100's host), and New has it done in the background while
// the caller loads a model, rather than in the model's first program.
func (g *gemm) warm() error {
	const n = 64
	buf, err := g.b.Alloc(3 * n * n * 4)
	if err != nil {
		return err
	}
	defer g.b.Free(buf)
	p := buf.(*buffer).ptr
	types := []cublaslt.DType{cublaslt.F32}
	switch g.b.precision {
	case kernels.F16:
		types = append(types, cublaslt.F16)
	case kernels.BF16:
		types = append(types, cublaslt.BF16)
	}
	return g.b.th.Do(func() error {
		for _, in := range types {
			gm := cublaslt.GEMM{M: n, N: n, K: n, LDA: n, LDB: n, LDC: n, Alpha: 1, In: in, Out: cublaslt.F32,
				A: p, B: p + n*n*4, C: p + 2*n*n*4, Stream: g.b.setup}
			if err := g.h.Matmul(&gm); err != nil {
				return err
			}
		}
		return g.b.drv.StreamSynchronize(g.b.setup)
	})
}

// batchPlan splits a product's batch axes into an outer loop (axes that do
// not collapse) and one strided batch (the inner axes that do, for every
// operand at once).
type batchPlan struct {
	outer      []int   // extents of the looped axes
	outerSt    [][]int // per looped axis: strides of a, b, out
	count      int     // members of the strided batch
	sa, sb, so int64   // their strides
}

func planBatch(a, b, out kernels.View) batchPlan {
	r := len(out.Shape)
	nb := r - 2
	p := batchPlan{count: 1}
	// Walk the batch axes from the innermost: an axis joins the strided
	// batch while every operand's stride continues the previous axis's.
	inner := nb
	for i := nb - 1; i >= 0; i-- {
		d := out.Shape[i]
		if d == 1 {
			inner = i
			continue
		}
		if p.count == 1 {
			p.sa, p.sb, p.so = int64(a.Strides[i]), int64(b.Strides[i]), int64(out.Strides[i])
			p.count = d
			inner = i
			continue
		}
		ok := int64(a.Strides[i]) == p.sa*int64(p.count) && int64(b.Strides[i]) == p.sb*int64(p.count) && int64(out.Strides[i]) == p.so*int64(p.count)
		if !ok {
			break
		}
		p.count *= d
		inner = i
	}
	for i := 0; i < inner; i++ {
		p.outer = append(p.outer, out.Shape[i])
		p.outerSt = append(p.outerSt, []int{a.Strides[i], b.Strides[i], out.Strides[i]})
	}
	return p
}

// supports reports whether the product runs here.
func (g *gemm) supports(s *kernels.Step) bool {
	for _, v := range append(append([]kernels.View(nil), s.In...), s.Out...) {
		if v.DType != kernels.F32 {
			return false
		}
	}
	a, b := s.In[0], s.In[1]
	if len(a.Shape) != len(s.Out[0].Shape) || len(b.Shape) != len(s.Out[0].Shape) {
		return false
	}
	if r := len(a.Shape); a.Shape[r-1] == 0 {
		return false // cuBLASLt wants K > 0; the host fills the bias
	}
	if _, _, err := kernels.GemmLayout(a); err != nil {
		return false
	}
	if _, _, err := kernels.GemmLayout(b); err != nil {
		return false
	}
	return s.Out[0].Contiguous()
}

// halfOf converts the matrices of operand v (batch members spaced stride
// apart) into dense row-major half precision at dst (on the queue's stream).
func (q *queue) toHalf(v kernels.View, bufs []kernels.Buffer, count int, stride int64, dst driver.DevicePtr, stream driver.Stream) error {
	r := len(v.Shape)
	rows, cols := v.Shape[r-2], v.Shape[r-1]
	bf := b2i(q.b.precision == kernels.BF16)
	total := int64(count * rows * cols)
	args := q.args.Reset().Ptr(ptr(bufs, v)).Ptr(dst).I64(int64(count)).I64(int64(rows)).I64(int64(cols)).I64(stride).I64(int64(v.Strides[r-2])).I64(int64(v.Strides[r-1])).I32(bf)
	grid := min(blocks(total, 256), uint32(q.b.info.SMs*16))
	return q.b.drv.Launch(q.b.mods.fixed("forge_to_half"), driver.Dim3{X: grid}, driver.Dim3{X: 256}, 0, stream, args)
}

// constHalf returns the cached half-precision copy of a constant operand,
// converting it once on the backend's setup stream.
func (q *queue) constHalf(v kernels.View, bufs []kernels.Buffer, count int, stride int64) (driver.DevicePtr, error) {
	g := q.b.blas
	key := fmt.Sprint(ptr(bufs, v), v.Shape, v.Strides, count, stride, q.b.precision)
	g.mu.Lock()
	defer g.mu.Unlock()
	if h := g.half[key]; h != nil {
		return h.buf.ptr, nil
	}
	r := len(v.Shape)
	n := count * v.Shape[r-2] * v.Shape[r-1] * 2
	hb, err := q.b.Alloc(n)
	if err != nil {
		return 0, err
	}
	h := hb.(*buffer)
	if err := q.toHalf(v, bufs, count, stride, h.ptr, q.b.setup); err != nil {
		return 0, err
	}
	if err := q.b.drv.StreamSynchronize(q.b.setup); err != nil {
		return 0, err
	}
	g.half[key] = &derived{h, []driver.DevicePtr{ptr(bufs, v)}}
	return h.ptr, nil
}

// linearQGEMMRows is the fewest rows for which an int8 weight-only product
// (OpLinearQ) with constant weights runs as a float32 cuBLASLt product on
// the weight dequantized once (constDequant), not as forge_linear_q or a
// merged group: the batched decoder step of many sequences, whose
// products the few-row kernels, built to stream the weights once for a
// single row, computed at a fraction of what the GPU's float32 units do
// (32 sequences of Whisper tiny: 194 µs a layer in products, 122 µs for
// the logits, on an H100).
const linearQGEMMRows = 16

// linearQGEMM reports whether the OpLinearQ step s runs through
// linearQ's cuBLASLt path: rows enough, dense operands, and a constant
// weight, scale and zero.
func linearQGEMM(s *kernels.Step, bufs []kernels.Buffer, b *Backend) bool {
	if b.blas == nil || s.Op != kernels.OpLinearQ || s.In[0].Shape[0] < linearQGEMMRows || !dense(s.In[0]) || !dense(s.In[1]) || !dense(s.Out[0]) {
		return false
	}
	for _, v := range s.In[1:4] {
		if !bufs[v.Slot].(*buffer).wrapped {
			return false
		}
	}
	return true
}

// constDequant returns the cached float32 copy of the constant int8
// weight w, (w − zero)·scale, made once on the backend's setup stream.
func (q *queue) constDequant(w, scale, zero kernels.View, bufs []kernels.Buffer) (driver.DevicePtr, error) {
	g := q.b.blas
	key := fmt.Sprint("dequant ", ptr(bufs, w), w.Shape, ptr(bufs, scale), ptr(bufs, zero), w.DType)
	g.mu.Lock()
	defer g.mu.Unlock()
	if h := g.half[key]; h != nil {
		return h.buf.ptr, nil
	}
	n := w.Len()
	hb, err := q.b.Alloc(n * 4)
	if err != nil {
		return 0, err
	}
	h := hb.(*buffer)
	args := q.args.Reset().Ptr(ptr(bufs, w)).Ptr(ptr(bufs, scale)).Ptr(ptr(bufs, zero)).Ptr(h.ptr).I64(int64(n)).I32(b2i(w.DType == kernels.I8))
	if err := q.b.drv.Launch(q.b.mods.fixed("forge_dequantize"), driver.Dim3{X: min(blocks(int64(n), 256), uint32(q.b.info.SMs*16))}, driver.Dim3{X: 256}, 0, q.b.setup, args); err != nil {
		return 0, err
	}
	if err := q.b.drv.StreamSynchronize(q.b.setup); err != nil {
		return 0, err
	}
	g.half[key] = &derived{h, []driver.DevicePtr{ptr(bufs, w), ptr(bufs, scale), ptr(bufs, zero)}}
	return h.ptr, nil
}

// linearQ runs an OpLinearQ step of many rows as y = x · Wᵀ in float32
// through cuBLASLt, W the weight dequantized once (on the backend's
// thread).
func (q *queue) linearQ(s *kernels.Step, bufs []kernels.Buffer) error {
	x, w, y := s.In[0], s.In[1], s.Out[0]
	M, K, N := x.Shape[0], x.Shape[1], w.Shape[0]
	wd, err := q.constDequant(w, s.In[2], s.In[3], bufs)
	if err != nil {
		return err
	}
	gm := cublaslt.GEMM{
		M: M, N: N, K: K, TransB: true, LDA: K, LDB: K, LDC: N,
		Alpha: 1, In: cublaslt.F32, Out: cublaslt.F32,
		A: ptr(bufs, x), B: wd, C: ptr(bufs, y),
		Workspace: q.blasWS.ptr, WorkspaceBytes: q.blasWS.n, Stream: q.stream,
	}
	return q.b.blas.h.Matmul(&gm)
}

// matmul runs an OpMatMul step (on the backend's thread); halfA says
// the step before it left the left operand in half precision at the start
// of the queue's scratch (halfin.go), as toHalf would have, and res, when
// not nil, is the sum after it that it computes (residual.go).
func (q *queue) matmul(s *kernels.Step, bufs []kernels.Buffer, halfA bool, res *residualAdd) error {
	g := q.b.blas
	if g == nil {
		return fmt.Errorf("cuda: matmul needs cuBLASLt, which is not installed")
	}
	av, bv, out := s.In[0], s.In[1], s.Out[0]
	r := len(out.Shape)
	M, N, K := out.Shape[r-2], out.Shape[r-1], av.Shape[r-1]
	if M*N == 0 {
		return nil
	}
	ta, lda, err := kernels.GemmLayout(av)
	if err != nil {
		return err
	}
	tb, ldb, err := kernels.GemmLayout(bv)
	if err != nil {
		return err
	}
	p := planBatch(av, bv, out)
	gm := cublaslt.GEMM{
		M: M, N: N, K: K, TransA: ta, TransB: tb, LDA: lda, LDB: ldb, LDC: N,
		Batch: p.count, StrideA: p.sa, StrideB: p.sb, StrideC: p.so,
		Alpha: 1, In: cublaslt.F32, Out: cublaslt.F32,
		Workspace: q.blasWS.ptr, WorkspaceBytes: q.blasWS.n, Stream: q.stream,
	}
	if len(s.In) > 2 {
		gm.Bias = ptr(bufs, s.In[2])
	}
	if res != nil {
		// One strided batch (residualOf): C and D are the sum's operand and
		// output, laid out as the product's output.
		gm.Beta = 1
		if res.bias != nil {
			gm.Bias = ptr(bufs, *res.bias)
		}
	}
	prec := q.b.stepPrecision(s)
	half := halfPlan(prec, p, K)
	if half {
		gm.In = cublaslt.F16
		if prec == kernels.BF16 {
			gm.In = cublaslt.BF16
		}
		gm.TransA, gm.TransB, gm.LDA, gm.LDB = false, false, K, N
		aCount, bCount := p.count, p.count
		if p.sa == 0 {
			aCount = 1
		}
		if p.sb == 0 {
			bCount = 1
		}
		scratch := q.scratch.ptr
		gm.A = scratch
		if !halfA {
			if err := q.toHalf(av, bufs, aCount, p.sa, gm.A, q.stream); err != nil {
				return err
			}
		}
		gm.StrideA = int64(M * K)
		if p.sa == 0 {
			gm.StrideA = 0
		}
		if bufs[bv.Slot].(*buffer).wrapped {
			if gm.B, err = q.constHalf(bv, bufs, bCount, p.sb); err != nil {
				return err
			}
		} else {
			gm.B = scratch + driver.DevicePtr(roundUp(aCount*M*K*2))
			if err := q.toHalf(bv, bufs, bCount, p.sb, gm.B, q.stream); err != nil {
				return err
			}
		}
		gm.StrideB = int64(K * N)
		if p.sb == 0 {
			gm.StrideB = 0
		}
	}
	// Loop over the batch axes that do not collapse.
	n := 1
	for _, d := range p.outer {
		n *= d
	}
	for i := range n {
		var offA, offB, offO int
		rem := i
		for j := len(p.outer) - 1; j >= 0; j-- {
			c := rem % p.outer[j]
			rem /= p.outer[j]
			offA += c * p.outerSt[j][0]
			offB += c * p.outerSt[j][1]
			offO += c * p.outerSt[j][2]
		}
		step := gm
		if !half {
			step.A = ptr(bufs, av) + driver.DevicePtr(offA*4)
			step.B = ptr(bufs, bv) + driver.DevicePtr(offB*4)
		}
		step.C = ptr(bufs, out) + driver.DevicePtr(offO*4)
		if res != nil {
			step.C, step.D = ptr(bufs, res.c), ptr(bufs, res.out)
		}
		if err := g.h.Matmul(&step); err != nil {
			return err
		}
	}
	return nil
}

// runsHalf reports whether matmul multiplies product s in half precision
// (halfPlan).
func runsHalf(b *Backend, s *kernels.Step) bool {
	av, bv, out := s.In[0], s.In[1], s.Out[0]
	return halfPlan(b.stepPrecision(s), planBatch(av, bv, out), av.Shape[len(av.Shape)-1])
}

// halfPlan reports whether a product of depth K with batch plan p runs in
// half precision: with f16/bf16 products (prec, the step's precision),
// when its batch axes collapse into one strided batch and K > 0.
func halfPlan(prec kernels.DType, p batchPlan, K int) bool {
	return prec != kernels.F32 && len(p.outer) == 0 && K > 0
}

// matmulScratch is the workspace a product needs in half precision: the
// activations' copy and a non-constant B's.
func matmulScratch(s *kernels.Step) int {
	av, bv, out := s.In[0], s.In[1], s.Out[0]
	r := len(out.Shape)
	M, N, K := out.Shape[r-2], out.Shape[r-1], av.Shape[r-1]
	p := planBatch(av, bv, out)
	return roundUp(p.count*M*K*2) + roundUp(p.count*K*N*2)
}
