//go:build !(darwin || (linux && amd64) || (linux && arm64 && cgo))

package gemm

import (
	"fmt"
	"runtime"
)

// blasLib is never loaded on this platform; the type keeps Engine portable.
type blasLib struct{ kind, lib string }

func (l *blasLib) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	panic("gemm: no BLAS on this platform")
}

func (l *blasLib) sgemmStrided(transA, transB bool, m, n, k int, alpha float32,
	a []float32, lda, strideA int, b []float32, ldb, strideB int,
	beta float32, c []float32, ldc, strideC int, batch int) {
	panic("gemm: no BLAS on this platform")
}

// LoadBLAS reports that this platform has no BLAS path; callers fall back to
// the Go GEMM.
func LoadBLAS(threads int, names ...string) (*Engine, error) {
	return nil, fmt.Errorf("gemm: no BLAS loader for %s/%s", runtime.GOOS, runtime.GOARCH)
}
