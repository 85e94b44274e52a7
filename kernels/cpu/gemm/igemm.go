package gemm

import (
	"fmt"
	"unsafe"
)

// Integer GEMM with zero points, as ONNX MatMulInteger:
//
//	C[i,j] = Σ_p (A[i,p] − za)·(B[p,j] − zb[j])        (int32)
//
// A is uint8 (activations from DynamicQuantizeLinear); B is uint8 or int8
// (weights). The kernels multiply unsigned A bytes by signed B bytes
// (vpdpbusd), so uint8 B is shifted into int8 once, at packing:
// b − zb = (b − 128) − (zb − 128). The zero points are then folded into
// per-row and per-column corrections:
//
//	Σ (a − za)(b − zb) = Σ a·b − zb·Σ_p a − za·Σ_p b + k·za·zb
//
// so the inner loop is a plain u8×s8 dot product. All arithmetic is int32
// and wraps modulo 2³², so the result is exact whenever the true result fits
// in an int32 (always when k ≤ 33025).

// Every integer kernel shares one packed layout, so a QuantB packed once works
// on every CPU path.
const (
	imr = 12 // rows of A per micro-panel
	inr = 32 // columns of B per sliver
)

// QuantB is a quantized B operand (k×n, after any transpose) packed for
// [Engine.GemmU8]: columns in slivers of 32, depth in groups of four bytes,
// uint8 values shifted to int8, plus the column sums and zero points the
// corrections need. Pack weights once at load time and reuse the QuantB for
// every product; it is read-only after packing and safe for concurrent use.
type QuantB struct {
	k, n   int
	kq     int     // k in groups of four, the last one zero-padded
	data   []int8  // sliver s, group q, column j, byte t at ((s*kq+q)*inr+j)*4+t
	colSum []int32 // Σ_p b[p, j] in the signed domain, padded to whole slivers
	zb     []int32 // zero point of column j in the signed domain, padded
}

// K is the depth (rows of op(B)) of the packed operand.
func (q *QuantB) K() int { return q.k }

// N is the number of columns of op(B), i.e. of C.
func (q *QuantB) N() int { return q.n }

// PackU8 packs a uint8 B for [Engine.GemmU8]. b holds B as stored: k×n, or
// n×k when transB (the PyTorch [out, in] weight layout, C = A·Bᵀ), with row
// stride ldb. zb holds the zero point: one value for the whole tensor, or n
// values, one per column of C (per output channel).
func PackU8(transB bool, k, n int, b []uint8, ldb int, zb []uint8) *QuantB {
	q := new(QuantB)
	packB8(q, transB, k, n, b, ldb, zb, true)
	return q
}

// PackS8 packs an int8 B for [Engine.GemmU8]; the arguments are as for
// [PackU8].
func PackS8(transB bool, k, n int, b []int8, ldb int, zb []int8) *QuantB {
	q := new(QuantB)
	packB8(q, transB, k, n, b, ldb, zb, false)
	return q
}

// packB8 packs into q, reusing q's buffers when they are large enough.
// shift moves uint8 values into the signed domain (x ↦ x − 128).
func packB8[T uint8 | int8](q *QuantB, transB bool, k, n int, b []T, ldb int, zb []T, shift bool) {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("gemm: PackB: negative dimension k=%d n=%d", k, n))
	}
	rows, cols := k, n
	if transB {
		rows, cols = n, k
	}
	checkLD("b", cols, ldb)
	checkLen("b", rows, cols, len(b), ldb)
	if len(zb) != 1 && len(zb) != n {
		panic(fmt.Sprintf("gemm: PackB: len(zb) = %d, want 1 or n = %d", len(zb), n))
	}
	var flip uint8 // what maps a stored byte to the signed domain
	if shift {
		flip = 0x80
	}
	slivers := ceilDiv(n, inr)
	q.k, q.n, q.kq = k, n, ceilDiv(k, 4)
	q.data = grow(q.data, slivers*q.kq*inr*4)
	q.colSum = grow(q.colSum, slivers*inr)
	q.zb = grow(q.zb, slivers*inr)
	clear(q.colSum)
	clear(q.zb)
	src := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
	dst := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(q.data))), len(q.data))
	if transB {
		packB8Transposed(dst, q.kq, k, n, src, ldb, flip)
		// Σ_p signed(b) = Σ_p (b ^ flip ^ 0x80) − 128·k: the xor with
		// flip^0x80 turns each stored byte into its signed value + 128.
		for j := 0; j < n; j++ {
			q.colSum[j] = int32(sumBytesXor(src[j*ldb:j*ldb+k], flip^0x80) - 128*int64(k))
		}
	} else {
		packB8Rows(dst, q.colSum, q.kq, k, n, src, ldb, flip)
	}
	for j := 0; j < n; j++ {
		z := zb[0]
		if len(zb) == n {
			z = zb[j]
		}
		q.zb[j] = int32(int8(uint8(z) ^ flip))
	}
}

// packB8Transposed packs B stored n×k (column j of op(B) is row j, so each
// group of four along k is four contiguous bytes): per sliver, a transpose
// of 32 rows of 4-byte groups. Whole blocks of 16 groups go through the SIMD
// panel transpose (the bytes of a group travel together as one 32-bit lane).
func packB8Transposed(dst []uint8, kq, k, n int, src []uint8, ldb int, flip uint8) {
	full := k / 4
	for s := 0; s*inr < n; s++ {
		cols := min(inr, n-s*inr)
		sl := dst[s*kq*inr*4 : (s+1)*kq*inr*4]
		done := 0
		if ldb%4 == 0 && full >= 16 {
			done = packRowsFast(asF32(sl), inr, cols, full, asF32(src[:len(src)&^3]), ldb/4, s*inr, 0)
			if flip != 0 {
				for q := 0; q < done; q++ {
					xorBytes(sl[q*inr*4:q*inr*4+cols*4], flip)
				}
			}
		}
		for q := done; q < kq; q++ {
			for jj := 0; jj < inr; jj++ {
				d := sl[(q*inr+jj)*4 : (q*inr+jj)*4+4 : (q*inr+jj)*4+4]
				if jj >= cols {
					clear(d)
					continue
				}
				row := src[(s*inr+jj)*ldb : (s*inr+jj)*ldb+k]
				for x := range d {
					if p := 4*q + x; p < k {
						d[x] = row[p] ^ flip
					} else {
						d[x] = 0
					}
				}
			}
		}
	}
}

// packB8Rows packs B stored k×n: each output group of four gathers one byte
// from four consecutive rows. It adds the signed column sums to colSum.
func packB8Rows(dst []uint8, colSum []int32, kq, k, n int, src []uint8, ldb int, flip uint8) {
	full := k / 4
	for q := 0; q < kq; q++ {
		for s := 0; s*inr < n; s++ {
			c0 := s * inr
			cols := min(inr, n-c0)
			d := dst[(s*kq+q)*inr*4 : (s*kq+q+1)*inr*4]
			clear(d[cols*4:])
			if q < full {
				r0 := src[(4*q)*ldb+c0:][:cols]
				r1 := src[(4*q+1)*ldb+c0:][:cols]
				r2 := src[(4*q+2)*ldb+c0:][:cols]
				r3 := src[(4*q+3)*ldb+c0:][:cols]
				cs := colSum[c0:][:cols]
				for jj := range r0 {
					g := d[jj*4 : jj*4+4 : jj*4+4]
					g[0], g[1], g[2], g[3] = r0[jj]^flip, r1[jj]^flip, r2[jj]^flip, r3[jj]^flip
					cs[jj] += int32(int8(g[0])) + int32(int8(g[1])) + int32(int8(g[2])) + int32(int8(g[3]))
				}
				continue
			}
			for jj := 0; jj < cols; jj++ {
				for x := 0; x < 4; x++ {
					d[jj*4+x] = 0
					if p := 4*q + x; p < k {
						d[jj*4+x] = src[p*ldb+c0+jj] ^ flip
						colSum[c0+jj] += int32(int8(d[jj*4+x]))
					}
				}
			}
		}
	}
}

// xorBytes flips x into every byte of b.
func xorBytes(b []uint8, x uint8) {
	w := uint64(x) * 0x0101010101010101
	i := 0
	for ; i+8 <= len(b); i += 8 {
		v := (*uint64)(unsafe.Pointer(&b[i]))
		*v ^= w
	}
	for ; i < len(b); i++ {
		b[i] ^= x
	}
}

// asF32 views bytes as float32 lanes for the 32-bit transpose, which moves
// bits without interpreting them.
func asF32(b []uint8) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// grow returns a slice of length n, reusing x's array when it is big enough.
func grow[T any](x []T, n int) []T {
	if cap(x) >= n {
		return x[:n]
	}
	return make([]T, n)
}

// igemmKernel computes one imr×inr tile from a packed A micro-panel and a B
// sliver over kq groups of four (kq ≥ 1):
//
//	c[i*ldc+j] = Σ a·b − rowSum[i]·zb[j] + colTerm[j]
//
// where colTerm[j] = k·za·zb[j] − za·colSum[j].
//
// fnF32 is the same product followed by the dequantizing epilogue of
// [Engine.GemmU8F32]: c[i*ldc+j] = float32(product)·scale[j] + bias[j],
// multiply then add, each rounded to float32 (no fused multiply-add), as the
// Cast → Mul → Add nodes of a dynamically quantized ONNX graph compute it.
type igemmKernel struct {
	name  string
	fn    func(kq int, a *uint8, b *int8, c *int32, ldc int, rowSum, zb, colTerm *int32)
	fnF32 func(kq int, a *uint8, b *int8, c *float32, ldc int, rowSum, zb, colTerm *int32, scale, bias *float32)
}

var genericIKernel = &igemmKernel{name: "go", fn: igemmKernelGo, fnF32: igemmKernelGoF32}

func igemmKernelGoF32(kq int, a *uint8, b *int8, c *float32, ldc int, rowSum, zb, colTerm *int32, scale, bias *float32) {
	var t [imr * inr]int32
	igemmKernelGo(kq, a, b, &t[0], inr, rowSum, zb, colTerm)
	dequantTile(&t, c, ldc, scale, bias)
}

// dequantTile writes c[i*ldc+j] = float32(t[i*inr+j])·scale[j] + bias[j].
func dequantTile(t *[imr * inr]int32, c *float32, ldc int, scale, bias *float32) {
	sc := unsafe.Slice(scale, inr)
	bs := unsafe.Slice(bias, inr)
	cs := unsafe.Slice(c, (imr-1)*ldc+inr)
	for i := 0; i < imr; i++ {
		row := cs[i*ldc : i*ldc+inr]
		for j := range row {
			// The explicit conversion rounds the product, so the compiler
			// may not fuse it with the add (it would on arm64).
			row[j] = float32(float32(t[i*inr+j])*sc[j]) + bs[j]
		}
	}
}

// igemmKernelGo is the portable integer kernel (and the reference the
// assembly ones are tested against).
func igemmKernelGo(kq int, a *uint8, b *int8, c *int32, ldc int, rowSum, zb, colTerm *int32) {
	as := unsafe.Slice(a, kq*imr*4)
	bs := unsafe.Slice(b, kq*inr*4)
	var acc [imr * inr]int32
	for q := 0; q < kq; q++ {
		ap := as[q*imr*4 : (q+1)*imr*4]
		bp := bs[q*inr*4 : (q+1)*inr*4]
		for i := 0; i < imr; i++ {
			a0, a1, a2, a3 := int32(ap[4*i]), int32(ap[4*i+1]), int32(ap[4*i+2]), int32(ap[4*i+3])
			row := acc[i*inr : (i+1)*inr]
			for j := range row {
				bj := bp[4*j : 4*j+4 : 4*j+4]
				row[j] += a0*int32(bj[0]) + a1*int32(bj[1]) + a2*int32(bj[2]) + a3*int32(bj[3])
			}
		}
	}
	rs := unsafe.Slice(rowSum, imr)
	zs := unsafe.Slice(zb, inr)
	ct := unsafe.Slice(colTerm, inr)
	cs := unsafe.Slice(c, (imr-1)*ldc+inr)
	for i := 0; i < imr; i++ {
		row := cs[i*ldc : i*ldc+inr]
		for j := range row {
			row[j] = acc[i*inr+j] - rs[i]*zs[j] + ct[j]
		}
	}
}

// GemmU8 computes C = (A − za)·(B − zb) in int32 (ONNX MatMulInteger), with
// A an m×k uint8 matrix of row stride lda and B packed by [PackU8] or
// [PackS8]; C is m×n with row stride ldc and is overwritten. See the package
// documentation for the exactness bound.
func (e *Engine) GemmU8(m int, a []uint8, lda int, za uint8, b *QuantB, c []int32, ldc int) {
	k, n := b.k, b.n
	if m < 0 {
		panic(fmt.Sprintf("gemm: GemmU8: negative m=%d", m))
	}
	checkLD("a", k, lda)
	checkLen("a", m, k, len(a), lda)
	checkLD("c", n, ldc)
	checkLen("c", m, n, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleI32(m, n, c, ldc)
		return
	}
	j := e.ijobs.Get().(*igemmJob)
	j.run(m, a, lda, za, b, c, ldc)
	e.ijobs.Put(j)
}

// GemmU8F32 computes the dequantized product in float32:
//
//	C[i,j] = float32((A − za)·(B − zb))[i,j] · (scaleA·scaleB[j]) + bias[j]
//
// i.e. MatMulInteger followed by the Cast, Mul and Add that a dynamically
// quantized ONNX graph applies to its output, fused so that the int32 product
// never goes through memory. scaleB holds one scale (per tensor) or n (per
// column); bias is nil or holds n values. C is m×n with row stride ldc and is
// overwritten.
func (e *Engine) GemmU8F32(m int, a []uint8, lda int, za uint8, scaleA float32, b *QuantB, scaleB, bias []float32, c []float32, ldc int) {
	k, n := b.k, b.n
	if m < 0 {
		panic(fmt.Sprintf("gemm: GemmU8F32: negative m=%d", m))
	}
	checkLD("a", k, lda)
	checkLen("a", m, k, len(a), lda)
	checkLD("c", n, ldc)
	checkLen("c", m, n, len(c), ldc)
	if len(scaleB) != 1 && len(scaleB) != n {
		panic(fmt.Sprintf("gemm: GemmU8F32: len(scaleB) = %d, want 1 or n = %d", len(scaleB), n))
	}
	if bias != nil && len(bias) != n {
		panic(fmt.Sprintf("gemm: GemmU8F32: len(bias) = %d, want n = %d", len(bias), n))
	}
	if m == 0 || n == 0 {
		return
	}
	j := e.ijobs.Get().(*igemmJob)
	padded := len(b.colSum)
	j.scale = grow(j.scale, padded)
	j.bias = grow(j.bias, padded)
	clear(j.scale[n:])
	clear(j.bias)
	for x := 0; x < n; x++ {
		sb := scaleB[0]
		if len(scaleB) == n {
			sb = scaleB[x]
		}
		j.scale[x] = scaleA * sb
	}
	copy(j.bias, bias)
	j.cf = c
	if k == 0 {
		// An empty sum is 0, so C is just the bias.
		for i := 0; i < m; i++ {
			copy(c[i*ldc:i*ldc+n], j.bias[:n])
		}
	} else {
		j.run(m, a, lda, za, b, nil, ldc)
	}
	j.cf = nil
	e.ijobs.Put(j)
}

// MatMulIntegerU8 is a one-shot [PackU8] + [Engine.GemmU8] for a B that is
// used once; it packs into pooled scratch, so it does not allocate in steady
// state. Prefer packing weights once.
func (e *Engine) MatMulIntegerU8(m, n, k int, a []uint8, lda int, za uint8, transB bool, b []uint8, ldb int, zb []uint8, c []int32, ldc int) {
	j := e.ijobs.Get().(*igemmJob)
	packB8(&j.qb, transB, k, n, b, ldb, zb, true)
	j.gemmScratchB(m, a, lda, za, c, ldc)
	e.ijobs.Put(j)
}

// MatMulIntegerS8 is [Engine.MatMulIntegerU8] for an int8 B.
func (e *Engine) MatMulIntegerS8(m, n, k int, a []uint8, lda int, za uint8, transB bool, b []int8, ldb int, zb []int8, c []int32, ldc int) {
	j := e.ijobs.Get().(*igemmJob)
	packB8(&j.qb, transB, k, n, b, ldb, zb, false)
	j.gemmScratchB(m, a, lda, za, c, ldc)
	e.ijobs.Put(j)
}

func (j *igemmJob) gemmScratchB(m int, a []uint8, lda int, za uint8, c []int32, ldc int) {
	q := &j.qb
	if m < 0 {
		panic(fmt.Sprintf("gemm: MatMulInteger: negative m=%d", m))
	}
	checkLD("a", q.k, lda)
	checkLen("a", m, q.k, len(a), lda)
	checkLD("c", q.n, ldc)
	checkLen("c", m, q.n, len(c), ldc)
	switch {
	case m == 0 || q.n == 0:
	case q.k == 0:
		scaleI32(m, q.n, c, ldc)
	default:
		j.run(m, a, lda, za, q, c, ldc)
	}
}

// scaleI32 zeroes C: the sum over an empty depth.
func scaleI32(m, n int, c []int32, ldc int) {
	for i := 0; i < m; i++ {
		clear(c[i*ldc : i*ldc+n])
	}
}

// igemmJob is one integer product's scratch, pooled per engine.
type igemmJob struct {
	e     *Engine
	kern  *igemmKernel
	team  team
	phase int

	m       int
	a       []uint8
	lda     int
	b       *QuantB
	c       []int32
	ldc     int
	panels  int
	colBlk  int // slivers per column task
	colTask int // number of column tasks
	rowBlk  int // panels per row task

	apack   []uint8   // packed A, all panels
	rowSum  []int32   // Σ_p A[i,p], padded to whole panels
	colTerm []int32   // k·za·zb[j] − za·colSum[j]
	tile    [][]int32 // per slot edge tile

	// GemmU8F32: float output, per-column scale and bias (both padded).
	cf          []float32
	scale, bias []float32
	tileF       [][]float32
	qb          QuantB // B scratch for the one-shot MatMulInteger calls
}

func newIGEMMJob(e *Engine) *igemmJob {
	j := &igemmJob{e: e, kern: e.ikern, tile: make([][]int32, e.threads), tileF: make([][]float32, e.threads)}
	j.team.init(j.task)
	return j
}

// l2Bytes is the share of L2 a block of packed B may take.
const l2Bytes = 512 << 10

func (j *igemmJob) run(m int, a []uint8, lda int, za uint8, b *QuantB, c []int32, ldc int) {
	j.m, j.a, j.lda, j.b, j.c, j.ldc = m, a, lda, b, c, ldc
	j.panels = ceilDiv(m, imr)
	j.apack = grow(j.apack, j.panels*imr*b.kq*4)
	j.rowSum = grow(j.rowSum, j.panels*imr)
	j.colTerm = grow(j.colTerm, len(b.colSum))
	z := int32(za)
	for x := range j.colTerm {
		j.colTerm[x] = int32(b.k)*z*b.zb[x] - z*b.colSum[x]
	}

	workers := workersFor(m, b.n, b.k, j.e.threads)
	slivers := ceilDiv(b.n, inr)
	// Column tasks hold at most l2Bytes of B; with several workers there
	// are at least as many tasks as workers, rows split when columns run out.
	colTasks := ceilDiv(slivers*b.kq*inr*4, l2Bytes)
	if workers > 1 {
		colTasks = roundUp(colTasks, workers)
	}
	j.colBlk = ceilDiv(slivers, min(colTasks, slivers))
	j.colTask = ceilDiv(slivers, j.colBlk)
	rowTasks := 1
	if j.colTask < workers {
		rowTasks = min(j.panels, ceilDiv(workers, j.colTask))
	}
	j.rowBlk = ceilDiv(j.panels, rowTasks)
	rowTasks = ceilDiv(j.panels, j.rowBlk)

	j.phase = phasePackA
	j.team.parallel(j.panels, workers)
	j.phase = phaseCompute
	j.team.parallel(j.colTask*rowTasks, workers)
	j.a, j.b, j.c = nil, nil, nil
}

func (j *igemmJob) task(t, slot int) {
	if j.phase == phasePackA {
		j.packA(t)
		return
	}
	j.compute(t, slot)
}

// packA packs rows [t·imr, +imr) of A: for each group of four along k, the
// four bytes of each row in turn, zero past the last row and the last column.
func (j *igemmJob) packA(t int) {
	k, kq := j.b.k, j.b.kq
	dst := j.apack[t*imr*kq*4 : (t+1)*imr*kq*4]
	r0 := t * imr
	rows := min(imr, j.m-r0)
	// Whole blocks of 16 groups of four go through the SIMD transpose, as
	// 32-bit lanes (zero rows past m included).
	done := 0
	if j.lda%4 == 0 && k/4 >= 16 {
		done = packRowsFast(asF32(dst), imr, rows, k/4, asF32(j.a[:len(j.a)&^3]), j.lda/4, r0, 0)
	}
	for r := 0; r < imr; r++ {
		i := r0 + r
		if r >= rows {
			for q := done; q < kq; q++ {
				clear(dst[(q*imr+r)*4 : (q*imr+r)*4+4])
			}
			j.rowSum[i] = 0
			continue
		}
		src := j.a[i*j.lda : i*j.lda+k]
		for q := done; q < kq; q++ {
			d := dst[(q*imr+r)*4 : (q*imr+r)*4+4 : (q*imr+r)*4+4]
			if 4*q+4 <= k {
				d[0], d[1], d[2], d[3] = src[4*q], src[4*q+1], src[4*q+2], src[4*q+3]
				continue
			}
			clear(d)
			copy(d, src[4*q:])
		}
		j.rowSum[i] = int32(sumBytesXor(src, 0))
	}
}

func (j *igemmJob) compute(t, slot int) {
	b := j.b
	kq := b.kq
	col, rowTask := t%j.colTask, t/j.colTask
	s0 := col * j.colBlk
	s1 := min(ceilDiv(b.n, inr), s0+j.colBlk)
	p0 := rowTask * j.rowBlk
	p1 := min(j.panels, p0+j.rowBlk)
	if j.tile[slot] == nil {
		j.tile[slot] = make([]int32, imr*inr)
		j.tileF[slot] = make([]float32, imr*inr)
	}
	tile, tileF := j.tile[slot], j.tileF[slot]
	fn, fnF32 := j.kern.fn, j.kern.fnF32
	ldc := j.ldc
	for ir := p0; ir < p1; ir++ {
		ap := &j.apack[ir*imr*kq*4]
		i := ir * imr
		rows := min(imr, j.m-i)
		rs := &j.rowSum[i]
		for s := s0; s < s1; s++ {
			jj := s * inr
			cols := min(inr, b.n-jj)
			bp := &b.data[s*kq*inr*4]
			full := rows == imr && cols == inr
			if j.cf != nil {
				if full {
					fnF32(kq, ap, bp, &j.cf[i*ldc+jj], ldc, rs, &b.zb[jj], &j.colTerm[jj], &j.scale[jj], &j.bias[jj])
					continue
				}
				fnF32(kq, ap, bp, &tileF[0], inr, rs, &b.zb[jj], &j.colTerm[jj], &j.scale[jj], &j.bias[jj])
				for r := 0; r < rows; r++ {
					copy(j.cf[(i+r)*ldc+jj:(i+r)*ldc+jj+cols], tileF[r*inr:r*inr+cols])
				}
				continue
			}
			if full {
				fn(kq, ap, bp, &j.c[i*ldc+jj], ldc, rs, &b.zb[jj], &j.colTerm[jj])
				continue
			}
			fn(kq, ap, bp, &tile[0], inr, rs, &b.zb[jj], &j.colTerm[jj])
			for r := 0; r < rows; r++ {
				copy(j.c[(i+r)*ldc+jj:(i+r)*ldc+jj+cols], tile[r*inr:r*inr+cols])
			}
		}
	}
}
