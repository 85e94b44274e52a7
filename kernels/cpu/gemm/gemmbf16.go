package gemm

import (
	"fmt"
	"unsafe"

	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// bfloat16 GEMM with a constant B.
//
// GemmBF16 computes C = op(A)·B (+ bias) with both operands rounded to
// bfloat16 and the products summed in float32: B, a weight, is rounded and
// packed once (PackBF16); A, the activations, as each call packs it. It
// runs on the same units and microkernels as the bfloat16 convolutions:
//
//   - pair kernels (AVX512_BF16's VDPBF16PS, or the portable oracle): the
//     blocked GEMM of gogemm.go with the depth counted in pairs. A
//     micro-panel holds, for each pair step p, one uint32 per row of A
//     (bf16(A[i, 2p]) | bf16(A[i, 2p+1])<<16: in row-major A the two are
//     neighbours, so a row converts in place, and the panel is the float32
//     path's transpose of 32-bit words); B is packed in slivers of nr
//     columns, [p][nr]. The convolution's offset kernel serves unchanged:
//     its B row p is read at b + off[p], and for a sliver off[p] = p·nr,
//     a table the weight keeps. One load of an offset per pair step is
//     all it costs against a dedicated kernel (24 VDPBF16PS per step).
//   - AMX tiles: the convolution's amxConvRows. A block of 32 rows of A is
//     packed as its A tiles (16 rows × 32 bfloat16 of the depth, a copy of
//     the converted rows in 64-byte pieces, no transpose), B as rows of
//     pair words across every column (rounded up to 32), so that the B tile
//     of step s is 16 rows at s·16 rows and the next 32 columns are 128
//     bytes on: the layout the convolution's window has.
//
// Why not run a linear layer as the convolution itself (a 1×1 convolution
// over time)? Whisper's activations are time-major, [T, d], and the
// convolution wants channel-major input and writes channel-major output:
// it would need a transpose of A before and of C after every product,
// while as a GEMM the activations' rows are already the pair kernel's
// broadcast operand and the AMX A tiles' rows.
//
// The loop nest is the float32 GEMM's short form (gogemm.go): all of A is
// packed in one parallel phase, and each task of a second one runs every
// depth block of its columns and A micro-panels, with the bias added to
// its part of C while it is in cache.

// BF16Weight is a constant B operand (k×n) rounded to bfloat16 and packed
// once for [Engine.GemmBF16] on the machine's bfloat16 unit. It is
// immutable and may be shared by concurrent calls.
type BF16Weight struct {
	k, n int
	kp   int // pair steps: ceil(k/2)

	// Pair form: depth blocks of kc pair steps, each of slivers slivers of
	// pk.nr columns, one uint32 per pair step and column ([p][nr]).
	pk      *bf16Kernel
	kc      int
	slivers int
	off     []int // off[p] = p·nr: a sliver's rows, for the offset kernel
	pairs   []uint32

	// AMX form (tiles != nil): steps steps of 32 depth values; rows of np
	// pair words (n rounded up to 32), 16 rows per step ([p][np]); toff[s]
	// is the byte offset of step s's rows.
	tiles tileFunc
	steps int
	np    int
	toff  []int
	rows  []uint32
}

// tileFunc is amxRows's signature: the AMX kernel, or its Go emulation in
// tests on machines without AMX.
type tileFunc func(a *uint16, b *uint32, off *int, steps, bstride int, c *float32, ldc, tpairs int)

// K returns the depth (rows of B).
func (w *BF16Weight) K() int { return w.k }

// N returns the number of columns of B.
func (w *BF16Weight) N() int { return w.n }

// Bytes returns the packed size, for memory accounting.
func (w *BF16Weight) Bytes() int { return 4 * (len(w.pairs) + len(w.rows)) }

// Path names the unit the weight runs on: "amx-bf16", "go-avx512bf16" or,
// in tests, "go-bf16" (the portable kernel).
func (w *BF16Weight) Path() string {
	if w.tiles != nil {
		return "amx-bf16"
	}
	return w.pk.name
}

// PackBF16 rounds op(B) (k×n; b stored k×n, or n×k when transB, row stride
// ldb) to bfloat16 and packs it for [Engine.GemmBF16] on the unit
// [BF16ConvPath] names; nil when the machine has no bfloat16 unit, where
// bfloat16 would only cost accuracy.
func (e *Engine) PackBF16(transB bool, k, n int, b []float32, ldb int) *BF16Weight {
	checkPackBF16(transB, k, n, b, ldb)
	if amxReady() {
		return packBF16Tiles(amxRows, transB, k, n, b, ldb)
	}
	if pk := bestBF16Kernel(); pk != nil {
		return packBF16Pairs(pk, transB, k, n, b, ldb)
	}
	return nil
}

func checkPackBF16(transB bool, k, n int, b []float32, ldb int) {
	if k <= 0 || n <= 0 {
		panic(fmt.Sprintf("gemm: PackBF16: %d×%d matrix", k, n))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkLD("b", bc, ldb)
	checkLen("b", br, bc, len(b), ldb)
}

// pairAt returns the pair word of B rows 2p and 2p+1 at column j: the
// depth's odd last row pairs with zero.
func pairAt(transB bool, k int, b []float32, ldb, p, j int) uint32 {
	at := func(r int) uint32 {
		if r >= k {
			return 0
		}
		if transB {
			return uint32(toBF16(b[j*ldb+r]))
		}
		return uint32(toBF16(b[r*ldb+j]))
	}
	return at(2*p) | at(2*p+1)<<16
}

// packBF16Pairs packs B for the pair kernel pk.
func packBF16Pairs(pk *bf16Kernel, transB bool, k, n int, b []float32, ldb int) *BF16Weight {
	kp := ceilDiv(k, 2)
	w := &BF16Weight{k: k, n: n, kp: kp, pk: pk, slivers: ceilDiv(n, pk.nr)}
	w.kc = ceilDiv(kp, ceilDiv(kp, pk.kc))
	w.off = make([]int, w.kc)
	for p := range w.off {
		w.off[p] = p * pk.nr
	}
	nr := pk.nr
	w.pairs = make([]uint32, w.slivers*nr*kp)
	for pc := 0; pc < kp; pc += w.kc {
		d := min(w.kc, kp-pc)
		blk := w.pairs[pc*w.slivers*nr:]
		for s := 0; s < w.slivers; s++ {
			sl := blk[s*nr*d : (s+1)*nr*d]
			for x := 0; x < nr && s*nr+x < n; x++ {
				for p := 0; p < d; p++ {
					sl[p*nr+x] = pairAt(transB, k, b, ldb, pc+p, s*nr+x)
				}
			}
		}
	}
	return w
}

// packBF16Tiles packs B for AMX tiles run by tiles.
func packBF16Tiles(tiles tileFunc, transB bool, k, n int, b []float32, ldb int) *BF16Weight {
	steps := ceilDiv(k, amxDepth)
	w := &BF16Weight{k: k, n: n, kp: ceilDiv(k, 2), tiles: tiles, steps: steps, np: roundUp(n, amxRowsPerPair)}
	w.toff = make([]int, steps)
	for s := range w.toff {
		w.toff[s] = 4 * s * 16 * w.np
	}
	w.rows = make([]uint32, steps*16*w.np)
	for p := 0; p < w.kp; p++ {
		row := w.rows[p*w.np : p*w.np+n]
		for j := range row {
			row[j] = pairAt(transB, k, b, ldb, p, j)
		}
	}
	return w
}

// GemmBF16 computes C = op(A)·B + bias (m×n, row stride ldc) for B packed
// by PackBF16: op(A) (m×k; a stored m×k, or k×m when transA, row stride
// lda) is rounded to bfloat16 as it is packed, and the products of the
// rounded operands are summed in float32. bias ([n]) may be nil. C is not
// read, and must not overlap A. Steady-state calls allocate nothing.
//
// The error against the float32 product is that of the rounding: each
// operand is within 2⁻⁸ of itself, so each term within about 2⁻⁷, and C
// within 2⁻⁷·Σ|A·B| plus float32's summation error.
func (e *Engine) GemmBF16(transA bool, m int, a []float32, lda int, w *BF16Weight, bias []float32, c []float32, ldc int) {
	if w == nil {
		panic("gemm: GemmBF16: nil weight")
	}
	if m < 0 {
		panic(fmt.Sprintf("gemm: GemmBF16: negative m = %d", m))
	}
	ar, ac := m, w.k
	if transA {
		ar, ac = w.k, m
	}
	checkLD("a", ac, lda)
	checkLD("c", w.n, ldc)
	checkLen("a", ar, ac, len(a), lda)
	checkLen("c", m, w.n, len(c), ldc)
	if bias != nil && len(bias) < w.n {
		panic(fmt.Sprintf("gemm: GemmBF16: len(bias) = %d < %d", len(bias), w.n))
	}
	if m == 0 {
		return
	}
	j := e.bjobs.Get().(*bf16Job)
	j.run(w, transA, m, a, lda, bias, c, ldc, e.threads)
	j.w, j.a, j.c, j.bias = nil, nil, nil, nil // do not pin the caller's memory
	e.bjobs.Put(j)
}

// bf16Job carries one GemmBF16 call to the workers; pooled per engine.
type bf16Job struct {
	team    team
	packing bool // the phase: packing A, else computing

	w      *BF16Weight
	transA bool
	m      int
	a      []float32
	lda    int
	bias   []float32
	c      []float32
	ldc    int

	mr                 int // rows of a packed A panel: the kernel's, 32 for AMX
	panels             int
	colBlock, colTasks int
	perTask            int // A panels per task

	apack []uint32    // all of A, packed
	rowp  [][]uint32  // per worker slot: a panel's rows as pair words
	tile  [][]float32 // per worker slot: an edge tile, or the AMX C block
}

func newBF16Job(e *Engine) *bf16Job {
	j := &bf16Job{rowp: make([][]uint32, e.threads), tile: make([][]float32, e.threads)}
	j.team.init(j.task)
	return j
}

// bf16Cols is the widest column block of a task: a pair kernel's B block
// (kc pair steps × 512 columns, 384 KiB) stays in L2, and the AMX path's
// C block (32 × 512 floats) in L1 and L2.
const bf16Cols = 512

func (j *bf16Job) run(w *BF16Weight, transA bool, m int, a []float32, lda int, bias, c []float32, ldc, threads int) {
	j.w, j.transA, j.m, j.a, j.lda, j.bias, j.c, j.ldc = w, transA, m, a, lda, bias, c, ldc
	flops := 2 * m * w.n * w.k
	var workers, nr int
	if w.tiles != nil {
		// AMX is fast enough that splitting small products costs more
		// than it saves (as for convolutions).
		j.mr, nr = amxRowsPerPair, amxRowsPerPair
		workers = max(1, min(threads, flops/(16*minFlopsPerWorker)))
		j.panels = ceilDiv(m, j.mr)
		j.grow(j.panels * j.mr * w.steps * 16)
	} else {
		// Twice the float32 kernel's rate: the same work is worth half
		// the workers' start-up cost.
		j.mr, nr = w.pk.mr, w.pk.nr
		workers = max(1, min(threads, flops/(2*minFlopsPerWorker)))
		j.panels = ceilDiv(m, j.mr)
		j.grow(j.panels * j.mr * w.kp)
	}
	j.packing = true
	j.team.parallel(j.panels, workers)

	var rowTasks int
	j.colBlock, j.colTasks, j.perTask, rowTasks = splitTasks(w.n, bf16Cols, nr, j.panels, workers)
	j.packing = false
	j.team.parallel(j.colTasks*rowTasks, workers)
}

// grow makes apack hold n words.
func (j *bf16Job) grow(n int) {
	if cap(j.apack) < n {
		j.apack = make([]uint32, n)
	}
	j.apack = j.apack[:n]
}

func (j *bf16Job) task(t, slot int) {
	switch {
	case j.packing:
		j.packA(t, slot)
	case j.w.tiles != nil:
		j.tilesTask(t, slot)
	default:
		j.pairsTask(t, slot)
	}
}

// pairRow sets dst[p] = bf16(A[i, 2p]) | bf16(A[i, 2p+1])<<16 for the
// pairs of row i of op(A), the odd last value paired with zero, and zeros
// past them.
func (j *bf16Job) pairRow(dst []uint32, i int) {
	k := j.w.k
	if !j.transA {
		kp := pairsOf(dst, j.a[i*j.lda:i*j.lda+k])
		clear(dst[kp:])
		return
	}
	for p := range dst {
		var v uint32
		if r := 2 * p; r < k {
			v = uint32(toBF16(j.a[r*j.lda+i]))
		}
		if r := 2*p + 1; r < k {
			v |= uint32(toBF16(j.a[r*j.lda+i])) << 16
		}
		dst[p] = v
	}
}

// packA packs A panel t: rows [t·mr, …) of op(A) as pair words, in
// micro-panels per depth block for a pair kernel, or as A tiles for AMX
// (see the file's comment); rows past m are zero.
func (j *bf16Job) packA(t, slot int) {
	w, mr := j.w, j.mr
	i0 := t * mr
	rows := min(mr, j.m-i0)
	ld := w.kp // a row's pair words in rowp
	if w.tiles != nil {
		ld = w.steps * 16
	}
	if cap(j.rowp[slot]) < mr*ld {
		j.rowp[slot] = make([]uint32, mr*ld)
	}
	rp := j.rowp[slot][:mr*ld]
	for r := 0; r < rows; r++ {
		j.pairRow(rp[r*ld:(r+1)*ld], i0+r)
	}
	if w.tiles != nil {
		// Tile (h, s) holds rows 16h … 16h+15 and pair words 16s … 16s+15.
		blk := j.apack[t*mr*ld : (t+1)*mr*ld]
		for r := 0; r < mr; r++ {
			h := r / 16
			for s := 0; s < w.steps; s++ {
				dst := blk[((h*w.steps+s)*16+r%16)*16:][:16]
				if r < rows {
					copy(dst, rp[r*ld+16*s:])
				} else {
					clear(dst)
				}
			}
		}
		return
	}
	for pc := 0; pc < w.kp; pc += w.kc {
		d := min(w.kc, w.kp-pc)
		dst := j.apack[pc*j.panels*mr+t*mr*d:][:mr*d]
		packPanel(words(dst), mr, rows, d, words(rp), ld, 0, pc, false)
	}
}

// words views pair words as float32 for packPanel, which only moves
// 32-bit values (no arithmetic), so their bits arrive unchanged.
func words(u []uint32) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(u))), len(u))
}

// span returns task t's columns [j0, j1) and A panels [p0, p1).
func (j *bf16Job) span(t int) (j0, j1, p0, p1 int) {
	col, rowTask := t%j.colTasks, t/j.colTasks
	j0 = col * j.colBlock
	p0 = rowTask * j.perTask
	return j0, min(j.w.n, j0+j.colBlock), p0, min(j.panels, p0+j.perTask)
}

// pairsTask runs task t on a pair kernel: every depth block of its A
// panels times its B slivers, then the bias.
func (j *bf16Job) pairsTask(t, slot int) {
	w, pk := j.w, j.w.pk
	mr, nr := pk.mr, pk.nr
	j0, j1, p0, p1 := j.span(t)
	// The slot's tile may have been sized by another kernel (weights of
	// different kernels share an engine), so check its size, not its presence.
	if cap(j.tile[slot]) < mr*nr {
		j.tile[slot] = make([]float32, mr*nr)
	}
	tile, c, ldc := j.tile[slot][:mr*nr], j.c, j.ldc
	for pc := 0; pc < w.kp; pc += w.kc {
		d := min(w.kc, w.kp-pc)
		ablk := j.apack[pc*j.panels*mr:]
		bblk := w.pairs[pc*w.slivers*nr:]
		beta := float32(1)
		if pc == 0 {
			beta = 0
		}
		for ir := p0; ir < p1; ir++ {
			ap := &ablk[ir*mr*d]
			i := ir * mr
			rows := min(mr, j.m-i)
			for jj := j0; jj < j1; jj += nr {
				cols := min(nr, j1-jj)
				bs := &bblk[jj*d]
				if rows == mr && cols == nr {
					pk.fn(d, ap, bs, &w.off[0], &c[i*ldc+jj], ldc, beta)
					continue
				}
				pk.fn(d, ap, bs, &w.off[0], &tile[0], nr, 0)
				for r := 0; r < rows; r++ {
					dst := c[(i+r)*ldc+jj : (i+r)*ldc+jj+cols]
					src := tile[r*nr : r*nr+cols]
					if beta == 0 {
						copy(dst, src)
					} else {
						vmath.Add(dst, dst, src)
					}
				}
			}
		}
	}
	j.addBias(p0*mr, min(j.m, p1*mr), j0, j1)
}

// tilesTask runs task t on AMX: each 32-row block of its A panels times
// its columns over the whole depth into a private C block, copied out
// with the bias.
func (j *bf16Job) tilesTask(t, slot int) {
	w := j.w
	j0, j1, p0, p1 := j.span(t)
	ldb := roundUp(j1-j0, amxRowsPerPair)
	if cap(j.tile[slot]) < amxRowsPerPair*ldb {
		j.tile[slot] = make([]float32, amxRowsPerPair*ldb)
	}
	cb := j.tile[slot]
	blk := amxRowsPerPair * w.steps * 16
	for ir := p0; ir < p1; ir++ {
		a := (*uint16)(unsafe.Pointer(&j.apack[ir*blk]))
		w.tiles(a, &w.rows[j0], &w.toff[0], w.steps, 4*w.np, &cb[0], 4*ldb, ldb/amxRowsPerPair)
		i := ir * amxRowsPerPair
		for r := 0; r < min(amxRowsPerPair, j.m-i); r++ {
			copy(j.c[(i+r)*j.ldc+j0:(i+r)*j.ldc+j1], cb[r*ldb:])
		}
	}
	j.addBias(p0*amxRowsPerPair, min(j.m, p1*amxRowsPerPair), j0, j1)
}

// addBias adds bias[j0:j1] to rows [r0, r1) of C.
func (j *bf16Job) addBias(r0, r1, j0, j1 int) {
	if j.bias == nil {
		return
	}
	b := j.bias[j0:j1]
	for i := r0; i < r1; i++ {
		row := j.c[i*j.ldc+j0 : i*j.ldc+j1]
		vmath.Add(row, row, b)
	}
}

// pairsOfGo is pairsOf from x[n] on (n even): the portable form, and the
// tail of the vector one.
func pairsOfGo(dst []uint32, x []float32, n int) int {
	kp := ceilDiv(len(x), 2)
	for p := n / 2; p < kp; p++ {
		v := uint32(toBF16(x[2*p]))
		if 2*p+1 < len(x) {
			v |= uint32(toBF16(x[2*p+1])) << 16
		}
		dst[p] = v
	}
	return kp
}
