package gemm

import "unsafe"

// microKernel computes one mr×nr tile of C from packed panels:
//
//	c[i*ldc+j] = alpha·Σ_p a[p*mr+i]·b[p*nr+j] + beta·c[i*ldc+j]
//
// for i < mr, j < nr, p < k (k ≥ 1). a holds an A micro-panel packed
// column by column (mr values per p), b a B sliver packed row by row (nr
// values per p). beta == 0 means C is written without being read.
type microKernel func(k int, a, b, c *float32, ldc int, alpha, beta float32)

// sgemmKernel describes one microkernel and the blocking that suits it: the
// A micro-panel (mr×kc) stays in L1, a packed B block (kc×nc) in L2 and the
// packed A block (mc×kc) in the outer cache.
type sgemmKernel struct {
	name   string
	mr, nr int
	kc     int // depth of one packed block
	mc     int // rows of A packed at once (multiple of mr)
	nc     int // columns of one B block (multiple of nr)
	fn     microKernel
	offFn  offsetKernel // the same tile with B rows read in place (Conv1d)
}

// genericKernel is the portable microkernel: plain Go, 4×4 accumulators
// that the compiler keeps in registers.
var genericKernel = &sgemmKernel{name: "go", mr: 4, nr: 4, kc: 256, mc: 512, nc: 512, fn: kernelGo4x4, offFn: offsetGo4x4}

func kernelGo4x4(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	as := unsafe.Slice(a, 4*k)
	bs := unsafe.Slice(b, 4*k)
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	var c20, c21, c22, c23 float32
	var c30, c31, c32, c33 float32
	for p := 0; p < len(as); p += 4 {
		ap := as[p : p+4 : p+4]
		bp := bs[p : p+4 : p+4]
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	storeRow4(cs[0:4:4], alpha, beta, c00, c01, c02, c03)
	storeRow4(cs[ldc:ldc+4:ldc+4], alpha, beta, c10, c11, c12, c13)
	storeRow4(cs[2*ldc:2*ldc+4:2*ldc+4], alpha, beta, c20, c21, c22, c23)
	storeRow4(cs[3*ldc:3*ldc+4:3*ldc+4], alpha, beta, c30, c31, c32, c33)
}

func storeRow4(c []float32, alpha, beta, v0, v1, v2, v3 float32) {
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*v0, alpha*v1, alpha*v2, alpha*v3
		return
	}
	c[0] = alpha*v0 + beta*c[0]
	c[1] = alpha*v1 + beta*c[1]
	c[2] = alpha*v2 + beta*c[2]
	c[3] = alpha*v3 + beta*c[3]
}

func bestIKernel() *igemmKernel { return igemmKernels()[0] }
