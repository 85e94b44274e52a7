// Package cpu is Forge's portable backend: every kernel in plain Go, the
// correctness oracle that other backends are checked against, and fast
// where it matters — SGEMM through a system BLAS or hand-written SIMD
// microkernels (package gemm), convolutions as im2col + GEMM, and work
// split across goroutines sized to GOMAXPROCS.
//
// Buffers are host memory, so Wrap references weights in place (mmap'd
// files stay zero-copy) and Launch runs synchronously. The backend is safe
// for concurrent use: many programs (one per stream) may launch at once.
//
// Constant weights are packed for the kernels on first use; a backend
// opened with a pack directory (NewWithPackDir, kernels.Options.PackDir)
// keeps the packs of weights in mapped files there and maps them in later
// processes instead of packing (see packcache.go).
package cpu
