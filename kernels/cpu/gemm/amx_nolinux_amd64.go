//go:build !linux

package gemm

// requestAMX: only Linux is known to grant the tile state here.
func requestAMX() bool { return false }
