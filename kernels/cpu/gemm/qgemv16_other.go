//go:build !amd64

package gemm

// int16Dots reports whether LinearQ8Int16 has a kernel for depth k here:
// no 8-bit dot-product unit is used on this architecture.
func int16Dots(k int) bool { return false }

// dotsInt16 is dotsInt16Go (never reached: int16Dots is false).
func dotsInt16(h, l []int8, corr []int32, q []byte, ldq int, signed bool, factor float64, out []float32) {
	dotsInt16Go(h, l, corr, q, ldq, signed, factor, out)
}
