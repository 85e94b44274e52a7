// Package neon holds Arm64 Advanced SIMD (NEON) kernels written in Go
// assembly, for the CPU backend on Apple silicon and other arm64 machines.
// The kernels work on raw pointers to packed panels and are meant to be
// called by drivers such as kernels/cpu/gemm, which own blocking, packing,
// edge tiles and bounds; on other architectures the package is empty.
//
// They are tested on amd64 hosts under user-mode emulation:
//
//	GOARCH=arm64 go test -exec qemu-aarch64 ./kernels/neon/...
package neon
