package gemm

import "github.com/tensorforge/forge/kernels/neon"

// neonKernel runs the NEON 8×12 microkernel. Advanced SIMD is part of every
// arm64 CPU, so it needs no feature check. The blocking suits 64–128 KiB L1
// and ≥ 1 MiB L2 (Apple M-series, Neoverse).
var neonKernel = &sgemmKernel{name: "go-neon", mr: 8, nr: 12, kc: 256, mc: 960, nc: 480, fn: neon.SGEMMKernel8x12}

func sgemmKernels() []*sgemmKernel { return []*sgemmKernel{neonKernel, genericKernel} }

func bf16Kernels() []*bf16Kernel { return []*bf16Kernel{genericBF16Kernel} }

func pairsOutrunFloat32() bool { return false }

func igemmKernels() []*igemmKernel { return []*igemmKernel{genericIKernel} }

func packRowsFast(dst []float32, w, rows, depth int, x []float32, ld, r0, p0 int) int { return 0 }
