package gemm

import "golang.org/x/sys/cpu"

//go:noescape
func sgemmKernelAVX2(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func sgemmKernelAVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

var (
	avx512Kernel = &sgemmKernel{name: "go-avx512", mr: 12, nr: 32, kc: 384, mc: 1920, nc: 512, fn: sgemmKernelAVX512}
	avx2Kernel   = &sgemmKernel{name: "go-avx2", mr: 6, nr: 16, kc: 256, mc: 1920, nc: 512, fn: sgemmKernelAVX2}
)

// sgemmKernels lists the kernels this CPU runs, fastest first. AVX-512 needs
// the OS to save ZMM state, which x/sys/cpu checks along with CPUID.
func sgemmKernels() []*sgemmKernel {
	var ks []*sgemmKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, genericKernel)
}

//go:noescape
func igemmKernelVNNI(kq int, a *uint8, b *int8, c *int32, ldc int, rowSum, zb, colTerm *int32)

var vnniIKernel = &igemmKernel{name: "go-avx512vnni", fn: igemmKernelVNNI}

// igemmKernels lists the integer kernels this CPU runs, fastest first.
func igemmKernels() []*igemmKernel {
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI {
		return []*igemmKernel{vnniIKernel, genericIKernel}
	}
	return []*igemmKernel{genericIKernel}
}
