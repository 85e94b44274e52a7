package gemm

import "golang.org/x/sys/cpu"

//go:noescape
func dotAVX2(x, y *float32, n int) float32

//go:noescape
func axpyAVX2(s float32, x, y *float32, n int)

var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot returns Σ x[i]·y[i] over len(x) (y at least as long).
func dot(x, y []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	y = y[:len(x)]
	if hasAVX2FMA {
		return dotAVX2(&x[0], &y[0], len(x))
	}
	return dotGo(x, y)
}

// axpy computes y[i] += s·x[i] over len(x) (y at least as long).
func axpy(s float32, x, y []float32) {
	if len(x) == 0 {
		return
	}
	y = y[:len(x)]
	if hasAVX2FMA {
		axpyAVX2(s, &x[0], &y[0], len(x))
		return
	}
	axpyGo(s, x, y)
}
