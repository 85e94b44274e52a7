//go:build !amd64

package gemm

// dotsQ8Fast has no vector form on this architecture; the Go loop runs.
func dotsQ8Fast(a []float32, q []byte, ldq int, signed bool, zq int32, out []float32) bool {
	return false
}
