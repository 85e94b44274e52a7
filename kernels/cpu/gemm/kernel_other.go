//go:build !amd64 && !arm64

package gemm

func sgemmKernels() []*sgemmKernel { return []*sgemmKernel{genericKernel} }

func bf16Kernels() []*bf16Kernel { return []*bf16Kernel{genericBF16Kernel} }

func pairsOutrunFloat32() bool { return false }

func igemmKernels() []*igemmKernel { return []*igemmKernel{genericIKernel} }

func packRowsFast(dst []float32, w, rows, depth int, x []float32, ld, r0, p0 int) int { return 0 }
