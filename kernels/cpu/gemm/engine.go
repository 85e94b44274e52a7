package gemm

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
)

// Engine runs single-precision GEMMs on one fixed path: a system BLAS loaded
// through purego, or the blocked Go GEMM with one microkernel. An Engine is
// safe for concurrent use; each call borrows its own packing buffers from the
// engine's pool, so steady-state calls on the Go path allocate nothing.
//
// Engines are handles to loaded native code and pooled memory: make them once
// (or use [Default]) and share them. Do not copy an Engine.
type Engine struct {
	threads  int
	blas     *blasLib      // nil: the Go path
	kern     *sgemmKernel  // Go microkernel (unused while blas != nil)
	noBLAS   string        // why the Go path is used, for Path; "" when chosen by the caller
	jobs     sync.Pool     // *sgemmJob, packing buffers sized for kern
	ijobs    sync.Pool     // *igemmJob, integer GEMM scratch
	qjobs    sync.Pool     // *qgemvJob, LinearQ8 scratch
	convJobs sync.Pool     // *convJob, Conv1d windows
	bjobs    sync.Pool     // *bf16Job, GemmBF16's packed A
	winoJobs sync.Pool     // *winoJob, WinogradConv1d windows and products
	ikern    *igemmKernel  // integer microkernel
	_        [0]sync.Mutex // vet: no copies
}

// defaultEngine is the documented process-wide handle behind Default: the
// system BLAS is dlopen'ed at most once per process.
var defaultEngine = sync.OnceValue(newDefault)

// Default returns the process-wide engine, built on first use with
// GOMAXPROCS threads. FORGE_BLAS chooses its SGEMM path:
//
//   - unset or "auto": the Go GEMM when the CPU has AVX-512 (faster than
//     OpenBLAS on Forge's shapes, see the package documentation), else the
//     system BLAS when one loads, else the best Go kernel;
//   - "on" (or "1", "true", "yes"): the system BLAS when one loads;
//   - "off" (or "0", "false", "no"): the best Go kernel;
//   - a file path: that BLAS library instead of the usual names.
func Default() *Engine { return defaultEngine() }

func newDefault() *Engine {
	threads := runtime.GOMAXPROCS(0)
	mode := strings.TrimSpace(os.Getenv("FORGE_BLAS"))
	switch strings.ToLower(mode) {
	case "off", "0", "false", "no":
		e := newGoEngine(threads, bestKernel())
		e.noBLAS = "FORGE_BLAS=" + mode
		return e
	case "", "auto":
		if k := bestKernel(); k.name == "go-avx512" {
			e := newGoEngine(threads, k)
			e.noBLAS = "default on AVX-512; FORGE_BLAS=on for the system BLAS"
			return e
		}
	}
	var names []string
	if mode != "" && !isOnMode(mode) {
		names = []string{mode}
	}
	e, err := LoadBLAS(threads, names...)
	if err != nil {
		e = newGoEngine(threads, bestKernel())
		e.noBLAS = "no BLAS: " + err.Error()
	}
	return e
}

func isOnMode(s string) bool {
	switch strings.ToLower(s) {
	case "on", "1", "true", "yes", "auto":
		return true
	}
	return false
}

// NewGo returns an engine that always runs the Go GEMM with the named
// microkernel ("" picks the fastest one this CPU supports; see [GoKernels])
// on the given number of threads (≤ 0 means GOMAXPROCS).
func NewGo(threads int, kernel string) (*Engine, error) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	k := bestKernel()
	if kernel != "" {
		k = nil
		for _, c := range sgemmKernels() {
			if c.name == kernel {
				k = c
				break
			}
		}
		if k == nil {
			return nil, fmt.Errorf("gemm: Go kernel %q is not available on this CPU (have %v)", kernel, GoKernels())
		}
	}
	return newGoEngine(threads, k), nil
}

// GoKernels lists the Go SGEMM microkernels this CPU can run, fastest first,
// e.g. ["go-avx512", "go-avx2", "go"].
func GoKernels() []string {
	ks := sgemmKernels()
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.name
	}
	return names
}

func bestKernel() *sgemmKernel { return sgemmKernels()[0] }

func newGoEngine(threads int, k *sgemmKernel) *Engine {
	e := &Engine{threads: threads, kern: k, ikern: bestIKernel()}
	e.initPools()
	return e
}

func (e *Engine) initPools() {
	e.jobs.New = func() any { return newSGEMMJob(e) }
	e.ijobs.New = func() any { return newIGEMMJob(e) }
	e.qjobs.New = func() any { return newQGEMVJob(e.threads) }
	e.convJobs.New = func() any { return newConvJob(e) }
	e.bjobs.New = func() any { return newBF16Job(e) }
	e.winoJobs.New = func() any { return newWinoJob(e) }
}

// Path says which path this engine's SGEMM runs and on how many threads, for
// logs and scorecards: e.g. "openblas (libopenblas.so.0, 2 threads)",
// "accelerate (/System/Library/Frameworks/Accelerate.framework/Accelerate)",
// "go-avx512 (2 threads)", "go-avx512 (2 threads; FORGE_BLAS=off)" or
// "go-avx512 (2 threads; default on AVX-512; FORGE_BLAS=on for the system BLAS)".
func (e *Engine) Path() string {
	if e.blas != nil {
		if e.blas.kind != "openblas" {
			// Only OpenBLAS lets us set its thread count; others choose.
			return fmt.Sprintf("%s (%s)", e.blas.kind, e.blas.lib)
		}
		return fmt.Sprintf("%s (%s, %d threads)", e.blas.kind, e.blas.lib, e.threads)
	}
	if e.noBLAS != "" {
		return fmt.Sprintf("%s (%d threads; %s)", e.kern.name, e.threads, e.noBLAS)
	}
	return fmt.Sprintf("%s (%d threads)", e.kern.name, e.threads)
}

// UsesBLAS reports whether the engine's SGEMM goes to a system BLAS.
func (e *Engine) UsesBLAS() bool { return e.blas != nil }

// IntPath names the kernel the engine's integer GEMMs run on:
// "go-avx512vnni", "go-avx2" or "go".
func (e *Engine) IntPath() string { return e.ikern.name }

// Threads is the number of threads the engine uses for one call.
func (e *Engine) Threads() int { return e.threads }

// SGEMM computes C = alpha·op(A)·op(B) + beta·C on row-major matrices, where
// op(X) is X or Xᵀ as transX says, op(A) is m×k, op(B) is k×n and C is m×n.
// lda, ldb and ldc are the row strides (in elements) of A, B and C as
// stored. As in BLAS, A and B are not read when alpha == 0 or k == 0, and C is
// not read when beta == 0 (so NaNs in C are overwritten).
func (e *Engine) SGEMM(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSGEMM(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	// Products with one row or one column are memory-bound: the Go vector
	// path reads the operands in place, while a BLAS sgemm (OpenBLAS 0.3.21
	// has no GEMV forwarding) packs the whole of B first, which for a
	// decoder's logits is a copy of the embedding table per token.
	if e.blas != nil && m != 1 && n != 1 {
		e.blas.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	e.goSGEMM(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, e.threads)
}

// SGEMMStrided runs batch independent GEMMs: for i < batch,
// C_i = alpha·op(A_i)·op(B_i) + beta·C_i where X_i starts at x[i·strideX].
// A stride of 0 shares one matrix across the batch (e.g. a weight); strideC
// must keep the C matrices disjoint.
func (e *Engine) SGEMMStrided(transA, transB bool, m, n, k int, alpha float32,
	a []float32, lda, strideA int, b []float32, ldb, strideB int,
	beta float32, c []float32, ldc, strideC int, batch int) {
	if batch < 0 || strideA < 0 || strideB < 0 || strideC < 0 {
		panic(fmt.Sprintf("gemm: SGEMMStrided: negative batch %d or stride (%d, %d, %d)", batch, strideA, strideB, strideC))
	}
	if batch == 0 || m == 0 || n == 0 {
		checkDims(transA, transB, m, n, k, lda, ldb, ldc)
		return
	}
	if batch > 1 && strideC < (m-1)*ldc+n {
		panic(fmt.Sprintf("gemm: SGEMMStrided: strideC %d overlaps C matrices of %d×%d with ldc %d", strideC, m, n, ldc))
	}
	for _, s := range [...]struct {
		name   string
		x      []float32
		stride int
	}{{"a", a, strideA}, {"b", b, strideB}, {"c", c, strideC}} {
		if need := (batch - 1) * s.stride; len(s.x) < need {
			panic(fmt.Sprintf("gemm: SGEMMStrided: len(%s) = %d < %d for %d batches of stride %d", s.name, len(s.x), need, batch, s.stride))
		}
	}
	// The last product has the shortest slices: checking it before anything
	// runs means a bad batch never leaves C half-written.
	last := batch - 1
	checkSGEMM(transA, transB, m, n, k, a[last*strideA:], lda, b[last*strideB:], ldb, c[last*strideC:], ldc)
	if e.blas != nil && m != 1 && n != 1 {
		e.blas.sgemmStrided(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
		return
	}
	e.goStrided(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

// SGEMM runs [Engine.SGEMM] on the [Default] engine.
func SGEMM(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Default().SGEMM(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SGEMMStrided runs [Engine.SGEMMStrided] on the [Default] engine.
func SGEMMStrided(transA, transB bool, m, n, k int, alpha float32,
	a []float32, lda, strideA int, b []float32, ldb, strideB int,
	beta float32, c []float32, ldc, strideC int, batch int) {
	Default().SGEMMStrided(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

// Path reports the [Default] engine's path (see [Engine.Path]).
func Path() string { return Default().Path() }

// checkSGEMM panics, naming the argument, when the dimensions, leading
// dimensions or slice lengths cannot describe the product.
func checkSGEMM(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	ar, ac, br, bc := checkDims(transA, transB, m, n, k, lda, ldb, ldc)
	checkLen("a", ar, ac, len(a), lda)
	checkLen("b", br, bc, len(b), ldb)
	checkLen("c", m, n, len(c), ldc)
}

// checkDims checks sizes and leading dimensions and returns the stored
// shapes of A (ar×ac) and B (br×bc).
func checkDims(transA, transB bool, m, n, k, lda, ldb, ldc int) (ar, ac, br, bc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac = m, k
	if transA {
		ar, ac = k, m
	}
	br, bc = k, n
	if transB {
		br, bc = n, k
	}
	checkLD("a", ac, lda)
	checkLD("b", bc, ldb)
	checkLD("c", n, ldc)
	return ar, ac, br, bc
}

func checkLD(name string, cols, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: ld%s = %d < max(1, %d columns)", name, ld, cols))
	}
}

func checkLen(name string, rows, cols, n, ld int) {
	if rows > 0 && cols > 0 {
		if need := (rows-1)*ld + cols; n < need {
			panic(fmt.Sprintf("gemm: len(%s) = %d < %d needed for %d×%d with ld%s = %d", name, n, need, rows, cols, name, ld))
		}
	}
}
