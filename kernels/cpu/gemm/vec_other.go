//go:build !amd64

package gemm

// dot returns Σ x[i]·y[i] over len(x) (y at least as long).
func dot(x, y []float32) float32 { return dotGo(x, y[:len(x)]) }

// hasDotRows8: there is no dotRows8 kernel here.
const hasDotRows8 = false

// dotRows8 has no kernel here: callers take dot row by row.
func dotRows8(m []float32, ld int, v []float32, out *[8]float32) bool { return false }

// axpy computes y[i] += s·x[i] over len(x) (y at least as long).
func axpy(s float32, x, y []float32) { axpyGo(s, x, y[:len(x)]) }

// axpy8 has no vector form on this architecture: the caller runs axpy.
func axpy8(s *[8]float32, x []float32, ldx int, y []float32) bool { return false }

func minMax(x []float32) (lo, hi float32, bad bool) { return minMaxGo(x) }

func quantize(dst []uint8, x []float32, scale, zp float32) { quantizeGo(dst, x, scale, zp) }

// sumBytesXor returns Σ (p[i] ^ x).
func sumBytesXor(p []uint8, x uint8) int64 {
	var s int64
	for _, v := range p {
		s += int64(v ^ x)
	}
	return s
}

func winoTransform(dst []float32, dstStride int, src []float32, offs []int, coefT []float32, outs, cols int) bool {
	return false
}

func deinterleave(rows, x []float32, S, wp int) bool { return false }

func interleave(y, tp []float32, S, n int) int { return 0 }

const winogradVectorized = false
