package cublaslt

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// DType is an element type of a GEMM operand, valued as cudaDataType_t.
type DType int32

// Element types (library_types.h, CUDA 11.8 header; cudarc v0.18.1 has the
// same values for CUDA 13.0).
const (
	F32  DType = 0  // CUDA_R_32F
	F16  DType = 2  // CUDA_R_16F
	BF16 DType = 14 // CUDA_R_16BF
)

// Size returns the element size in bytes (0 for an unknown type).
func (t DType) Size() int {
	switch t {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	return 0
}

// String names the type.
func (t DType) String() string {
	switch t {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("DType(%d)", int32(t))
}

// Enum values from cublasLt.h and cublas_api.h (CUDA 11.8 headers, checked
// against cudarc v0.18.1's bindgen output of the CUDA 11.4-13.0 headers,
// where they are unchanged).
const (
	opN = 0 // CUBLAS_OP_N
	opT = 1 // CUBLAS_OP_T

	compute32F         = 68 // CUBLAS_COMPUTE_32F
	compute32FFastTF32 = 77 // CUBLAS_COMPUTE_32F_FAST_TF32

	// cublasLtMatmulDescAttributes_t, with the C type each takes.
	descTransA      = 3 // CUBLASLT_MATMUL_DESC_TRANSA, int32_t
	descTransB      = 4 // CUBLASLT_MATMUL_DESC_TRANSB, int32_t
	descEpilogue    = 7 // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t
	descBiasPointer = 8 // CUBLASLT_MATMUL_DESC_BIAS_POINTER, const void*

	epilogueBias = 4 // CUBLASLT_EPILOGUE_BIAS: bias has D's type (default BIAS_DATA_TYPE -1)

	// cublasLtMatrixLayoutAttribute_t.
	layoutBatchCount         = 5 // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t
	layoutStridedBatchOffset = 6 // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t, in elements

	// cublasLtMatmulPreferenceAttributes_t.
	prefMaxWorkspaceBytes = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t
	prefMinAlignmentA     = 5 // CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t (B, C, D follow: 6, 7, 8)
)

// RecommendedWorkspace is the workspace NVIDIA's cuBLAS documentation
// recommends for Hopper (32 MiB); smaller ones exclude some algorithms.
const RecommendedWorkspace = 32 << 20

// heuristicResult is cublasLtMatmulHeuristicResult_t (cublasLt.h): the
// algorithm (cublasLtMatmulAlgo_t, uint64_t data[8]), size_t
// workspaceSize, cublasStatus_t state, float wavesCount, int reserved[4];
// 96 bytes.
type heuristicResult struct {
	algo          [8]uint64
	workspaceSize uintptr
	state         int32
	wavesCount    float32
	reserved      [4]int32
}

// GEMM is one (strided-batched) row-major product
//
//	C[b] = Alpha·op(A[b])·op(B[b]) + Beta·C[b] (+ Bias)
//
// (or D[b] = …, C[b] left as it was, when D is given) for b < Batch, where op(A) is M×K, op(B) is K×N and C is M×N, all
// row-major. op(X) is X, or Xᵀ when TransX is set: then X is stored K×M
// (for A) or N×K (for B).
type GEMM struct {
	M, N, K        int
	TransA, TransB bool

	// A, B and C are device addresses. C is both read (with Beta) and
	// written, unless D is given: then the result goes to D, laid out as
	// C, and C is only read.
	A, B, C, D driver.DevicePtr
	// LDA, LDB and LDC are the row-major leading dimensions (elements
	// between rows as stored); 0 means dense.
	LDA, LDB, LDC int

	// Batch is the number of products (0 or 1: one). StrideA, StrideB and
	// StrideC are the distances in elements between consecutive members;
	// a zero StrideA or StrideB uses the same matrix for every member.
	Batch                     int
	StrideA, StrideB, StrideC int64

	Alpha, Beta float32

	// Bias, when not 0, is a vector of N values of type Out added to every
	// row of every product (cuBLASLt's bias epilogue).
	Bias driver.DevicePtr

	// In is A's and B's type, Out C's: F32 in and out; or F16 or BF16 in,
	// F32 or the same half type out. Products accumulate in f32.
	In, Out DType
	// TF32 lets f32 products use TF32 tensor cores (10-bit mantissa
	// inputs, f32 accumulation); only with In and Out F32.
	TF32 bool

	// Workspace is device memory cuBLASLt may use during the product,
	// WorkspaceBytes long (0: none; RecommendedWorkspace is best). It
	// must not be used by other work on other streams at the same time.
	Workspace      driver.DevicePtr
	WorkspaceBytes int

	// Stream is where the product is enqueued.
	Stream driver.Stream
}

// stored returns the row-major stored shape of op(X) = rows×cols, given
// whether it is transposed.
func stored(rows, cols int, trans bool) (r, c int) {
	if trans {
		return cols, rows
	}
	return rows, cols
}

// ld returns the leading dimension: the given one, or the stored width.
func ld(given, width int) int {
	if given == 0 {
		return width
	}
	return given
}

// validate checks g for what cuBLASLt would reject less clearly (or not at
// all, reading out of bounds instead).
func (g *GEMM) validate() error {
	switch {
	case g.M <= 0 || g.N <= 0 || g.K <= 0:
		return fmt.Errorf("cublaslt: GEMM %dx%dx%d: every dimension must be positive", g.M, g.N, g.K)
	case g.A == 0 || g.B == 0 || g.C == 0:
		return errors.New("cublaslt: GEMM: A, B and C must be device addresses")
	case g.In != F32 && g.In != F16 && g.In != BF16:
		return fmt.Errorf("cublaslt: GEMM: input type %v not supported", g.In)
	case g.Out != F32 && g.Out != g.In:
		return fmt.Errorf("cublaslt: GEMM: output type %v with input %v not supported (f32 or the input type)", g.Out, g.In)
	case g.TF32 && (g.In != F32 || g.Out != F32):
		return fmt.Errorf("cublaslt: GEMM: TF32 needs f32 inputs and output, not %v→%v", g.In, g.Out)
	case g.Batch < 0 || g.StrideA < 0 || g.StrideB < 0 || g.StrideC < 0:
		return errors.New("cublaslt: GEMM: negative batch or stride")
	case g.Batch > 1 && g.StrideC == 0:
		return errors.New("cublaslt: GEMM: batched products need a non-zero StrideC (they would all write one C)")
	case g.WorkspaceBytes < 0 || (g.WorkspaceBytes > 0 && g.Workspace == 0):
		return errors.New("cublaslt: GEMM: WorkspaceBytes without a Workspace")
	}
	ra, ca := stored(g.M, g.K, g.TransA)
	rb, cb := stored(g.K, g.N, g.TransB)
	for _, m := range []struct {
		name       string
		ld, width  int
		rows       int
		stride     int64
		allowsZero bool
	}{
		{"A", ld(g.LDA, ca), ca, ra, g.StrideA, true},
		{"B", ld(g.LDB, cb), cb, rb, g.StrideB, true},
		{"C", ld(g.LDC, g.N), g.N, g.M, g.StrideC, false},
	} {
		if m.ld < m.width {
			return fmt.Errorf("cublaslt: GEMM: leading dimension of %s is %d, less than its %d columns", m.name, m.ld, m.width)
		}
		// Inputs may interleave (the heads of a [tokens, heads·d] matrix
		// are batch members d apart), as cuBLAS's strided batches allow;
		// outputs must not, or members would overwrite each other.
		if m.name == "C" && g.Batch > 1 && m.stride < int64(m.ld)*int64(m.rows-1)+int64(m.width) {
			return fmt.Errorf("cublaslt: GEMM: batch stride of %s (%d) overlaps its %dx%d matrices", m.name, m.stride, m.rows, m.width)
		}
	}
	return nil
}

// layout is a column-major cuBLASLt matrix layout.
type layout struct {
	rows, cols uint64
	ld         int64
	stride     int64
}

// ltProblem is a row-major GEMM as cuBLASLt's column-major product.
//
// A row-major r×c matrix with leading dimension ld is, read column-major,
// the c×r matrix of its transpose with the same ld. So row-major
// C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's "A" is our
// B (rows×cols = B's stored cols×rows, op = TransB), its "B" is our A (op
// = TransA), and its m, n, k are our N, M, K; its D (= C) is N×M with our
// LDC. The bias epilogue adds a vector over D's rows, which are our
// columns: one value per output feature, as a linear layer wants. No
// CUBLASLT_ORDER_ROW layout is needed (fewer algorithms support it).
type ltProblem struct {
	transA, transB bool             // cuBLASLt's ops
	a, b, c        layout           // cuBLASLt's A (our B), B (our A), C and D (our C)
	aPtr, bPtr     driver.DevicePtr // our B, our A
}

func (g *GEMM) lt() ltProblem {
	ra, ca := stored(g.M, g.K, g.TransA)
	rb, cb := stored(g.K, g.N, g.TransB)
	p := ltProblem{
		transA: g.TransB,
		transB: g.TransA,
		a:      layout{rows: uint64(cb), cols: uint64(rb), ld: int64(ld(g.LDB, cb))},
		b:      layout{rows: uint64(ca), cols: uint64(ra), ld: int64(ld(g.LDA, ca))},
		c:      layout{rows: uint64(g.N), cols: uint64(g.M), ld: int64(ld(g.LDC, g.N))},
		aPtr:   g.B,
		bPtr:   g.A,
	}
	if g.Batch > 1 {
		p.a.stride, p.b.stride, p.c.stride = g.StrideB, g.StrideA, g.StrideC
	}
	return p
}

// alignment returns the largest power of two up to 256 dividing the
// address of every batch member (addr + i·strideBytes), which is what the
// heuristic must assume of the pointer (cuBLASLt assumes 256 by default,
// more than a view into a pooled arena may have).
func alignment(addr driver.DevicePtr, strideBytes int64) uint32 {
	v := uint64(addr) | uint64(strideBytes) | 256
	return 1 << bits.TrailingZeros64(v)
}

// planKey is what an algorithm choice depends on.
type planKey struct {
	in, out                   DType
	tf32, bias                bool
	transA, transB            bool
	m, n, k, lda, ldb, ldc    int
	batch                     int
	strideA, strideB, strideC int64
	alignA, alignB, alignC    uint32
	alignBias                 uint32
	workspace                 int
}

func (g *GEMM) key() planKey {
	_, ca := stored(g.M, g.K, g.TransA)
	_, cb := stored(g.K, g.N, g.TransB)
	k := planKey{
		in: g.In, out: g.Out, tf32: g.TF32, bias: g.Bias != 0,
		transA: g.TransA, transB: g.TransB,
		m: g.M, n: g.N, k: g.K,
		lda: ld(g.LDA, ca), ldb: ld(g.LDB, cb), ldc: ld(g.LDC, g.N),
		batch:     max(g.Batch, 1),
		workspace: g.WorkspaceBytes,
	}
	in, out := int64(g.In.Size()), int64(g.Out.Size())
	if k.batch > 1 {
		k.strideA, k.strideB, k.strideC = g.StrideA, g.StrideB, g.StrideC
	}
	k.alignA = alignment(g.A, k.strideA*in)
	k.alignB = alignment(g.B, k.strideB*in)
	k.alignC = alignment(g.C, k.strideC*out)
	if g.D != 0 {
		k.alignC = min(k.alignC, alignment(g.D, k.strideC*out))
	}
	if g.Bias != 0 {
		k.alignBias = alignment(g.Bias, 0)
	}
	return k
}

// plan is a cached product configuration: descriptors and the algorithm
// the heuristic chose.
type plan struct {
	desc, a, b, c uintptr // cublasLtMatmulDesc_t and three cublasLtMatrixLayout_t
	algo          [8]uint64
}

// Handle is a cuBLASLt handle with its cache of planned products. It must
// be created, used and closed on the thread where the device's primary
// context is current (a driver.Thread). Its methods are safe for
// concurrent use, but products are planned and enqueued one at a time.
type Handle struct {
	l *Lib
	h uintptr // cublasLtHandle_t

	mu    sync.Mutex
	plans map[planKey]*plan
}

// NewHandle creates a handle (cublasLtCreate) for the current context's
// device.
func (l *Lib) NewHandle() (*Handle, error) {
	var h uintptr
	if err := call(&l.create, uintptr(unsafe.Pointer(&h))); err != nil {
		return nil, err
	}
	return &Handle{l: l, h: h, plans: map[planKey]*plan{}}, nil
}

// Plans returns how many product configurations are cached.
func (h *Handle) Plans() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.plans)
}

// Close destroys the cached descriptors and the handle.
func (h *Handle) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for k, p := range h.plans {
		errs = append(errs, h.l.destroyPlan(p))
		delete(h.plans, k)
	}
	if h.h != 0 {
		errs = append(errs, call(&h.l.destroy, h.h))
		h.h = 0
	}
	return errors.Join(errs...)
}

// Prepare plans the product g describes without running it: it chooses
// and caches the algorithm, as the first Matmul of its configuration
// would. Preparing before a stream capture keeps the heuristic's host-side
// work out of the captured region.
func (h *Handle) Prepare(g *GEMM) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _, err := h.planFor(g)
	return err
}

// Matmul enqueues the product g describes on g.Stream. The first product
// of each shape, layout, type, alignment and workspace size asks
// cuBLASLt's heuristic for the best algorithm and caches it with the
// descriptors; later ones only set the bias pointer and enqueue. The
// alpha and beta scalars are read before Matmul returns (host pointer
// mode), so a product may be captured into a CUDA graph.
func (h *Handle) Matmul(g *GEMM) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, key, err := h.planFor(g)
	if err != nil {
		return err
	}
	if g.Bias != 0 {
		bias := uint64(g.Bias)
		if err := call(&h.l.descSetAttribute, p.desc, descBiasPointer, uintptr(unsafe.Pointer(&bias)), 8); err != nil {
			return err
		}
	}
	lt := g.lt()
	d := g.C
	if g.D != 0 {
		d = g.D
	}
	scalars := [2]float32{g.Alpha, g.Beta}
	err = call(&h.l.matmul, h.h, p.desc,
		uintptr(unsafe.Pointer(&scalars[0])),
		uintptr(lt.aPtr), p.a,
		uintptr(lt.bPtr), p.b,
		uintptr(unsafe.Pointer(&scalars[1])),
		uintptr(g.C), p.c,
		uintptr(d), p.c,
		uintptr(unsafe.Pointer(&p.algo)),
		uintptr(g.Workspace), uintptr(g.WorkspaceBytes),
		uintptr(g.Stream))
	if err != nil {
		return fmt.Errorf("cublaslt: %s: %w", describe(key), err)
	}
	return nil
}

// planFor validates g and returns its cached plan, planning it first if
// needed. h.mu is held.
func (h *Handle) planFor(g *GEMM) (*plan, planKey, error) {
	if err := g.validate(); err != nil {
		return nil, planKey{}, err
	}
	if h.h == 0 {
		return nil, planKey{}, errors.New("cublaslt: product on a closed handle")
	}
	key := g.key()
	if p := h.plans[key]; p != nil {
		return p, key, nil
	}
	p, err := h.plan(g, key)
	if err != nil {
		return nil, key, fmt.Errorf("cublaslt: planning %s: %w", describe(key), err)
	}
	h.plans[key] = p
	return p, key, nil
}

// describe names a product for errors: "f16→f32 128x512x64 NT batch 8".
func describe(k planKey) string {
	op := func(t bool) string {
		if t {
			return "T"
		}
		return "N"
	}
	s := fmt.Sprintf("%v→%v %dx%dx%d %s%s", k.in, k.out, k.m, k.n, k.k, op(k.transA), op(k.transB))
	if k.batch > 1 {
		s += fmt.Sprintf(" batch %d", k.batch)
	}
	if k.tf32 {
		s += " tf32"
	}
	if k.bias {
		s += " +bias"
	}
	return s
}

// plan creates the descriptors for g and asks the heuristic for the best
// algorithm.
func (h *Handle) plan(g *GEMM, key planKey) (_ *plan, err error) {
	l := h.l
	p := &plan{}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.destroyPlan(p))
		}
	}()
	if err := l.describeGEMM(p, g, key); err != nil {
		return nil, err
	}
	pref, err := l.preference(g, key)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, call(&l.prefDestroy, pref)) }()
	var res heuristicResult
	var n int32
	if err := call(&l.algoGetHeuristic, h.h, p.desc, p.a, p.b, p.c, p.c, pref, 1,
		uintptr(unsafe.Pointer(&res)), uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, err
	}
	if n < 1 || Status(res.state) != StatusSuccess {
		return nil, &Error{Call: "cublasLtMatmulAlgoGetHeuristic", Status: StatusNotSupported,
			Msg: fmt.Sprintf("no algorithm (alignments A %d B %d C %d bytes, workspace %d bytes)", key.alignA, key.alignB, key.alignC, g.WorkspaceBytes)}
	}
	p.algo = res.algo
	return p, nil
}

// describeGEMM creates g's operation descriptor and matrix layouts in p
// (host-side objects: no handle or device needed). On error p holds what
// was created, for destroyPlan.
func (l *Lib) describeGEMM(p *plan, g *GEMM, key planKey) error {
	compute := int32(compute32F)
	if g.TF32 {
		compute = compute32FFastTF32
	}
	if err := call(&l.descCreate, uintptr(unsafe.Pointer(&p.desc)), uintptr(compute), uintptr(F32)); err != nil {
		return err
	}
	lt := g.lt()
	for _, a := range []struct {
		attr uintptr
		val  int32
	}{{descTransA, op(lt.transA)}, {descTransB, op(lt.transB)}} {
		v := a.val
		if err := call(&l.descSetAttribute, p.desc, a.attr, uintptr(unsafe.Pointer(&v)), 4); err != nil {
			return err
		}
	}
	if g.Bias != 0 {
		epi := uint32(epilogueBias)
		if err := call(&l.descSetAttribute, p.desc, descEpilogue, uintptr(unsafe.Pointer(&epi)), 4); err != nil {
			return err
		}
		// The heuristic reads the pointer's alignment.
		bias := uint64(g.Bias)
		if err := call(&l.descSetAttribute, p.desc, descBiasPointer, uintptr(unsafe.Pointer(&bias)), 8); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		dst *uintptr
		t   DType
		lay layout
	}{{&p.a, g.In, lt.a}, {&p.b, g.In, lt.b}, {&p.c, g.Out, lt.c}} {
		if err := l.newLayout(m.dst, m.t, m.lay, key.batch); err != nil {
			return err
		}
	}
	return nil
}

// preference creates the heuristic's search preference for g: the
// workspace it may use and the alignments its pointers have.
func (l *Lib) preference(g *GEMM, key planKey) (pref uintptr, err error) {
	if err := call(&l.prefCreate, uintptr(unsafe.Pointer(&pref))); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, call(&l.prefDestroy, pref))
		}
	}()
	ws := uint64(g.WorkspaceBytes)
	if err := call(&l.prefSetAttribute, pref, prefMaxWorkspaceBytes, uintptr(unsafe.Pointer(&ws)), 8); err != nil {
		return 0, err
	}
	// cuBLASLt's A is our B and its B our A; C and D are both our C.
	for i, al := range []uint32{key.alignB, key.alignA, key.alignC, key.alignC} {
		v := al
		if err := call(&l.prefSetAttribute, pref, uintptr(prefMinAlignmentA+i), uintptr(unsafe.Pointer(&v)), 4); err != nil {
			return 0, err
		}
	}
	return pref, nil
}

// op returns the cublasOperation_t for a transpose flag.
func op(trans bool) int32 {
	if trans {
		return opT
	}
	return opN
}

// newLayout creates a column-major layout, batched when batch > 1.
func (l *Lib) newLayout(dst *uintptr, t DType, lay layout, batch int) error {
	if err := call(&l.layoutCreate, uintptr(unsafe.Pointer(dst)), uintptr(t), uintptr(lay.rows), uintptr(lay.cols), uintptr(lay.ld)); err != nil {
		return err
	}
	if batch <= 1 {
		return nil
	}
	count, stride := int32(batch), lay.stride
	if err := call(&l.layoutSetAttribute, *dst, layoutBatchCount, uintptr(unsafe.Pointer(&count)), 4); err != nil {
		return err
	}
	return call(&l.layoutSetAttribute, *dst, layoutStridedBatchOffset, uintptr(unsafe.Pointer(&stride)), 8)
}

// destroyPlan destroys whatever descriptors p holds.
func (l *Lib) destroyPlan(p *plan) error {
	var errs []error
	for _, lay := range []uintptr{p.a, p.b, p.c} {
		if lay != 0 {
			errs = append(errs, call(&l.layoutDestroy, lay))
		}
	}
	if p.desc != 0 {
		errs = append(errs, call(&l.descDestroy, p.desc))
	}
	*p = plan{}
	return errors.Join(errs...)
}
