//go:build !amd64 && !arm64

package gemm

func sgemmKernels() []*sgemmKernel { return []*sgemmKernel{genericKernel} }

func igemmKernels() []*igemmKernel { return []*igemmKernel{genericIKernel} }
