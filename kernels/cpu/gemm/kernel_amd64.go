package gemm

import "golang.org/x/sys/cpu"

//go:noescape
func sgemmKernelAVX2(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func sgemmKernelAVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

//go:noescape
func offsetKernelAVX2(k int, a, b *float32, off *int, c *float32, ldc int, beta float32)

//go:noescape
func offsetKernelAVX512(k int, a, b *float32, off *int, c *float32, ldc int, beta float32)

//go:noescape
func offsetKernelBF16(k int, a, b *uint32, off *int, c *float32, ldc int, beta float32)

// avx512BF16Kernel is the VDPBF16PS pair kernel (conv_amd64.s): the
// float32 AVX-512 kernel's 12×32 tile with two depth steps per
// instruction, so half as many pair steps per depth block.
var avx512BF16Kernel = &bf16Kernel{name: "go-avx512bf16", mr: 12, nr: 32, kc: 192, fn: offsetKernelBF16}

// bf16Kernels lists the bfloat16 pair kernels this CPU runs, fastest
// first, the portable one last.
func bf16Kernels() []*bf16Kernel {
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16 {
		return []*bf16Kernel{avx512BF16Kernel, genericBF16Kernel}
	}
	return []*bf16Kernel{genericBF16Kernel}
}

// pairsOutrunFloat32 reports whether the pair kernel is faster than the
// float32 one here (pairsOutrunOn this CPU's vendor).
func pairsOutrunFloat32() bool { return pairsFast }

// pairsFast is read once: CPUID traps to the hypervisor in a virtual
// machine, and the answer cannot change while the process runs.
var pairsFast = pairsOutrunOn(cpuVendor())

// pairsOutrunOn says whether VDPBF16PS outruns float32 FMAs on a vendor's
// cores, which the instruction set does not tell: AMD's Zen 4 and 5 issue
// VDPBF16PS as often as an FMA, so two depth steps an instruction double
// the rate (BenchmarkConv1d on a Zen 4: 160–200 GFLOP/s per CPU-second
// against 86–103). Intel's cores issue it on one port where FMAs go to
// two, so it only matches the FMAs' peak and loses to them once the pairs
// are packed: on an Intel Xeon with AVX512_BF16 and no AMX granted, 70–80
// GFLOP/s per CPU-second against 120–150 for float32, in convolutions and
// products alike (reports/2026-12-07-bf16-intel.md). Other vendors' cores
// are unmeasured and keep float32.
func pairsOutrunOn(vendor string) bool { return vendor == "AuthenticAMD" }

// cpuVendor is CPUID leaf 0's vendor string ("GenuineIntel",
// "AuthenticAMD", ...).
func cpuVendor() string {
	_, b, c, d := cpuid(0, 0)
	var v [12]byte
	for i, r := range [3]uint32{b, d, c} {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
	}
	return string(v[:])
}

// cpuid executes CPUID with EAX = leaf and ECX = sub.
//
//go:noescape
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

var (
	avx512Kernel = &sgemmKernel{name: "go-avx512", mr: 12, nr: 32, kc: 384, mc: 1920, nc: 512, fn: sgemmKernelAVX512, offFn: offsetKernelAVX512}
	avx2Kernel   = &sgemmKernel{name: "go-avx2", mr: 6, nr: 16, kc: 256, mc: 1920, nc: 512, fn: sgemmKernelAVX2, offFn: offsetKernelAVX2}
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

//go:noescape
func igemmKernelVNNIF32(kq int, a *uint8, b *int8, c *float32, ldc int, rowSum, zb, colTerm *int32, scale, bias *float32)

var vnniIKernel = &igemmKernel{name: "go-avx512vnni", fn: igemmKernelVNNI, fnF32: igemmKernelVNNIF32}

//go:noescape
func igemmKernelAVX2(kq int, a *uint8, b *int8, c *int32, ldc int, rowSum, zb, colTerm *int32)

// igemmKernelAVX2F32 adds the float epilogue in Go: CPUs without VNNI are
// rare enough that a second assembly kernel is not worth its upkeep.
func igemmKernelAVX2F32(kq int, a *uint8, b *int8, c *float32, ldc int, rowSum, zb, colTerm *int32, scale, bias *float32) {
	var t [imr * inr]int32
	igemmKernelAVX2(kq, a, b, &t[0], inr, rowSum, zb, colTerm)
	dequantTile(&t, c, ldc, scale, bias)
}

var avx2IKernel = &igemmKernel{name: "go-avx2", fn: igemmKernelAVX2, fnF32: igemmKernelAVX2F32}

// igemmKernels lists the integer kernels this CPU runs, fastest first.
func igemmKernels() []*igemmKernel {
	var ks []*igemmKernel
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI {
		ks = append(ks, vnniIKernel)
	}
	if cpu.X86.HasAVX2 {
		ks = append(ks, avx2IKernel)
	}
	return append(ks, genericIKernel)
}

// transpose16 writes the transpose of a block of source rows into 16
// destination rows: row p of dst (at dst + p·dstStride) gets column p of the
// first rows rows of src (row r at src + r·srcStride), zero for rows ≥ rows;
// only the lanes set in mask are stored. Strides are in elements; 16 columns
// of every loaded row are read.
//
//go:noescape
func transpose16(dst *float32, dstStride int, src *float32, srcStride int, rows int, mask uint16)

// packRowsFast packs whole blocks of 16 along the depth of an interleaved
// panel (see packPanel) with the AVX-512 transpose, and returns how much of
// the depth it packed. Widths that are neither ≤ 16 nor a multiple of 16 are
// left to the caller.
func packRowsFast(dst []float32, w, rows, depth int, x []float32, ld, r0, p0 int) int {
	if !cpu.X86.HasAVX512F || !(w <= 16 || w%16 == 0) {
		return 0
	}
	mask := uint16(0xFFFF)
	if w < 16 {
		mask = 1<<w - 1
	}
	pb := 0
	for ; pb+16 <= depth; pb += 16 {
		for g := 0; g*16 < w; g++ {
			n := max(0, min(16, rows-16*g))
			src := &x[0] // not read when n == 0
			if n > 0 {
				src = &x[(r0+16*g)*ld+p0+pb]
			}
			transpose16(&dst[pb*w+16*g], w, src, ld, n, mask)
		}
	}
	return pb
}
