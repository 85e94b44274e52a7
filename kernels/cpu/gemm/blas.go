//go:build darwin || (linux && amd64) || (linux && arm64 && cgo)

// On linux/arm64 the BLAS path needs cgo: without it purego still makes the
// binary dynamically linked, and cross-compiled tests could then not run
// under qemu-aarch64 without an arm64 sysroot. A native arm64 build with a C
// toolchain (cgo's default) gets the BLAS path; a cgo-less one runs NEON.

package gemm

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// blasLib is a loaded system BLAS. The library stays loaded for the life of
// the process: the handle is never closed, because other engines (or other
// users of the same library in this process) may still call into it.
//
// Products go through the Fortran entry point sgemm_, whose arguments are
// all pointers: purego.SyscallN calls it in about 0.2 µs with one small
// allocation, whereas cblas_sgemm takes alpha and beta by value in float
// registers, which only purego.RegisterFunc can pass — through reflection,
// at about 5 µs and a dozen allocations per call. Row-major C = A·B is the
// column-major product Cᵀ = Bᵀ·Aᵀ, so the operands are passed swapped.
type blasLib struct {
	kind string // "openblas", "accelerate" or "blas"
	lib  string // the name or path it was loaded from

	sgemmF uintptr   // sgemm_
	args   sync.Pool // *fortranArgs: the scalars sgemm_ reads by address
}

// fortranArgs holds the by-reference scalars of one sgemm_ call. It lives on
// the heap (in a pool) so that its address stays valid during the C call.
type fortranArgs struct {
	transA, transB byte
	m, n, k        int32
	lda, ldb, ldc  int32
	alpha, beta    float32
	// mats holds A, B and C during a call: storing the pointers in this
	// heap object keeps the matrices reachable and off any goroutine stack
	// (heap objects never move), which is what makes the uintptrs in call
	// valid until the call returns.
	mats [3]unsafe.Pointer
	// call holds sgemm_'s arguments: passed as a slice to SyscallN, a
	// pooled array costs nothing, where the variadic list was heap
	// allocated on every call.
	call [15]uintptr
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

// LoadBLAS returns an engine whose SGEMM calls the system BLAS (its sgemm_)
// through purego (no cgo). It tries the named libraries, or the platform's
// usual ones when none are named, and keeps the first that loads, exports
// sgemm_ and multiplies a test product correctly. For OpenBLAS it sets
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
	sym, err := purego.Dlsym(h, "sgemm_")
	if err != nil {
		return nil, fmt.Errorf("%s: no sgemm_: %w", name, err)
	}
	lib = &blasLib{kind: "blas", lib: name, sgemmF: sym}
	lib.args.New = func() any { return new(fortranArgs) }
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
			return fmt.Errorf("sgemm_ self-test gave %v, want %v", c, want)
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
	p := l.args.Get().(*fortranArgs)
	// Column-major view: C (n×m, ldc) = op(B)ᵀ-side first.
	p.transA, p.transB = 'N', 'N'
	if transB {
		p.transA = 'T'
	}
	if transA {
		p.transB = 'T'
	}
	p.m, p.n, p.k = int32(n), int32(m), int32(k)
	p.lda, p.ldb, p.ldc = int32(ldb), int32(lda), int32(ldc)
	p.alpha, p.beta = alpha, beta
	// The two trailing 1s are the hidden lengths of the character
	// arguments in the gfortran ABI; C implementations ignore them.
	p.mats = [3]unsafe.Pointer{unsafe.Pointer(first(a)), unsafe.Pointer(first(b)), unsafe.Pointer(first(c))}
	p.call = [15]uintptr{
		uintptr(unsafe.Pointer(&p.transA)), uintptr(unsafe.Pointer(&p.transB)),
		uintptr(unsafe.Pointer(&p.m)), uintptr(unsafe.Pointer(&p.n)), uintptr(unsafe.Pointer(&p.k)),
		uintptr(unsafe.Pointer(&p.alpha)),
		uintptr(p.mats[1]), uintptr(unsafe.Pointer(&p.lda)),
		uintptr(p.mats[0]), uintptr(unsafe.Pointer(&p.ldb)),
		uintptr(unsafe.Pointer(&p.beta)),
		uintptr(p.mats[2]), uintptr(unsafe.Pointer(&p.ldc)),
		1, 1}
	purego.SyscallN(l.sgemmF, p.call[:]...)
	p.mats = [3]unsafe.Pointer{} // do not pin the matrices from the pool
	l.args.Put(p)
}

func (l *blasLib) sgemmStrided(transA, transB bool, m, n, k int, alpha float32,
	a []float32, lda, strideA int, b []float32, ldb, strideB int,
	beta float32, c []float32, ldc, strideC int, batch int) {
	for i := 0; i < batch; i++ {
		l.sgemm(transA, transB, m, n, k, alpha, a[i*strideA:], lda, b[i*strideB:], ldb, beta, c[i*strideC:], ldc)
	}
}

// first returns &x[0], or nil for an empty slice (which BLAS does not
// dereference, since the matching dimension is then zero).
func first(x []float32) *float32 {
	if len(x) == 0 {
		return nil
	}
	return &x[0]
}
