//go:build (linux || darwin) && (amd64 || arm64)

package gemm

import (
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/ebitengine/purego"
)

// CBLAS enum values (cblas.h).
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// blasLib is a loaded system BLAS. The library stays loaded for the life of
// the process: the handle is never closed, because other engines (or other
// users of the same library in this process) may still call into it.
type blasLib struct {
	kind string // "openblas", "accelerate" or "blas"
	lib  string // the name or path it was loaded from

	cblasSgemm func(order, transA, transB, m, n, k int32, alpha float32,
		a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)
}

// blasCandidates are tried in order when no library is named: OpenBLAS by
// its runtime soname first (Debian's libopenblas0-pthread), then the
// development link, then whatever the BLAS alternative points at.
func blasCandidates() []string {
	if runtime.GOOS == "darwin" {
		return []string{"/System/Library/Frameworks/Accelerate.framework/Accelerate"}
	}
	return []string{"libopenblas.so.0", "libopenblas.so", "libblas.so.3", "libblas.so"}
}

// LoadBLAS returns an engine whose SGEMM calls the system BLAS's cblas_sgemm
// through purego (no cgo). It tries the named libraries, or the platform's
// usual ones when none are named, and keeps the first that loads, exports
// cblas_sgemm and multiplies a test product correctly. For OpenBLAS it sets
// the library's (process-wide) thread count to threads (≤ 0: GOMAXPROCS).
// Each call dlopens again; keep the engine rather than calling LoadBLAS per
// product.
func LoadBLAS(threads int, names ...string) (*Engine, error) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if len(names) == 0 {
		names = blasCandidates()
	}
	var errs []error
	for _, name := range names {
		lib, err := openBLAS(name, threads)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e := &Engine{threads: threads, blas: lib, kern: bestKernel(), ikern: bestIKernel()}
		e.initPools()
		return e, nil
	}
	return nil, fmt.Errorf("gemm: no usable BLAS: %w", errors.Join(errs...))
}

func openBLAS(name string, threads int) (lib *blasLib, err error) {
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen %s: %w", name, err)
	}
	sym, err := purego.Dlsym(h, "cblas_sgemm")
	if err != nil {
		return nil, fmt.Errorf("%s: no cblas_sgemm: %w", name, err)
	}
	lib = &blasLib{kind: "blas", lib: name}
	purego.RegisterFunc(&lib.cblasSgemm, sym)
	if runtime.GOOS == "darwin" {
		lib.kind = "accelerate"
	}
	if set, err := purego.Dlsym(h, "openblas_set_num_threads"); err == nil {
		var setThreads func(int32)
		purego.RegisterFunc(&setThreads, set)
		setThreads(int32(threads))
		lib.kind = "openblas"
	}
	if err := lib.selfTest(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return lib, nil
}

// selfTest multiplies a 2×3 by a 3×2 product, catching libraries with a
// different integer width (ILP64) or calling convention before any real
// product runs.
func (l *blasLib) selfTest() error {
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{7, 8, 9, 10, 11, 12}
	c := []float32{1, 1, 1, 1}
	l.sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 2, c, 2)
	want := []float32{60, 66, 141, 156}
	for i := range want {
		if c[i] != want[i] {
			return fmt.Errorf("cblas_sgemm self-test gave %v, want %v", c, want)
		}
	}
	return nil
}

func (l *blasLib) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for _, v := range [...]int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			panic(fmt.Sprintf("gemm: dimension %d exceeds the 32-bit BLAS interface", v))
		}
	}
	ta, tb := int32(cblasNoTrans), int32(cblasNoTrans)
	if transA {
		ta = cblasTrans
	}
	if transB {
		tb = cblasTrans
	}
	l.cblasSgemm(cblasRowMajor, ta, tb, int32(m), int32(n), int32(k), alpha,
		first(a), int32(lda), first(b), int32(ldb), beta, first(c), int32(ldc))
	// The C code reads the slices through raw pointers; keep them alive.
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
}

// first returns &x[0], or nil for an empty slice (which BLAS does not
// dereference, since the matching dimension is then zero).
func first(x []float32) *float32 {
	if len(x) == 0 {
		return nil
	}
	return &x[0]
}
