package gemm

import (
	"math"
	"unsafe"
)

// bfloat16 convolutions on pair instructions (AVX512_BF16).
//
// On CPUs with a bfloat16 dot-product instruction but no AMX tiles, where
// it outruns float32 FMAs (AMD Zen 4 and 5), a weight packed by
// PackConvWeightBF16 runs the implicit-GEMM convolution of conv.go with
// its operands rounded to bfloat16. Every element of A and of the input window is a uint32
// holding two bfloat16 values consecutive along the depth (input channels
// 2c and 2c+1 at one tap), and VDPBF16PS multiplies 16 such pairs by 16
// others, adding both products to 16 float32 sums: twice the work of a
// float32 FMA per instruction, from half the bytes. The driver, window
// geometry and blocking are the float32 path's with the depth counted in
// channel pairs; the window is the AMX path's (fillWindowBF16: row
// (c·S + r) interleaves channels 2c and 2c+1), so the B row of pair step
// (c, tap) starts at that row shifted by the tap's delay, as in float32.

// pairKernel is the bfloat16 form of offsetKernel: a and the window hold
// bfloat16 pairs (low half the even depth step), pair step p of B read
// at b + off[p]:
//
//	c[i*ldc+j] = Σ_p (hi(a[p*mr+i])·hi(b[off[p]+j]) + lo(a[p*mr+i])·lo(b[off[p]+j])) + beta·c[i*ldc+j]
//
// summed in float32 (products of bfloat16 values are exact in float32),
// for i < mr, j < nr, p < k (k ≥ 1); C is not read when beta == 0.
type pairKernel func(k int, a, b *uint32, off *int, c *float32, ldc int, beta float32)

// bf16Kernel describes one pair microkernel and its depth block: kc pair
// steps of an A micro-panel (mr·kc·4 bytes) stay in L1.
type bf16Kernel struct {
	name   string
	mr, nr int
	kc     int // pair steps per depth block
	fn     pairKernel
}

// genericBF16Kernel is the portable pair kernel: the oracle the assembly
// kernel is tested against, and what tests run the pair driver with on
// any CPU. Production never picks it: without bfloat16 instructions the
// float32 kernels are faster and exact.
var genericBF16Kernel = &bf16Kernel{name: "go-bf16", mr: 4, nr: 4, kc: 128, fn: pairGo4x4}

// bestBF16Kernel returns the fastest pair kernel with hardware behind it
// where it outruns the float32 kernels (pairsOutrunFloat32), nil where
// the CPU has no bfloat16 dot product or bfloat16 would only cost
// accuracy. Tests reach every kernel the CPU runs through bf16Kernels.
func bestBF16Kernel() *bf16Kernel {
	if k := bf16Kernels()[0]; k != genericBF16Kernel && pairsOutrunFloat32() {
		return k
	}
	return nil
}

// bfLo and bfHi widen the bfloat16 in the low or high half of a pair.
func bfLo(v uint32) float32 { return math.Float32frombits(v << 16) }
func bfHi(v uint32) float32 { return math.Float32frombits(v &^ 0xFFFF) }

// pairGo4x4 is the portable pair kernel, summing in VDPBF16PS's order
// (the high product first).
func pairGo4x4(k int, a, b *uint32, off *int, c *float32, ldc int, beta float32) {
	as := unsafe.Slice(a, 4*k)
	offs := unsafe.Slice(off, k)
	var acc [4][4]float32
	for p, o := range offs {
		bp := (*[4]uint32)(unsafe.Add(unsafe.Pointer(b), 4*o))
		for i, av := range as[4*p : 4*p+4 : 4*p+4] {
			alo, ahi := bfLo(av), bfHi(av)
			for x, bv := range bp {
				acc[i][x] += ahi * bfHi(bv)
				acc[i][x] += alo * bfLo(bv)
			}
		}
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	for i := range acc {
		storeRow4(cs[i*ldc:i*ldc+4:i*ldc+4], 1, beta, acc[i][0], acc[i][1], acc[i][2], acc[i][3])
	}
}

// packConvWeightPairs packs w [cout, cin, k] for the pair kernel pk:
// depth blocks of kc pair steps (step p = channel pair p/k, tap p%k), each
// block's A micro-panels of mr rows, one uint32 per row and step; rows
// past cout and the odd channel past cin are zero. The micro-panels are
// packed in parallel (see pairPacker).
func (e *Engine) packConvWeightPairs(pk *bf16Kernel, cout, cin, k int, w []float32) *ConvWeight {
	cw, words := e.convPairsLayout(pk, cout, cin, k)
	cw.pairs = make([]uint32, words)
	workers := max(1, min(e.threads, cout*cin*k/minPackPerWorker))
	p := &pairPacker{cw: cw, w: w}
	p.init(p.panel)
	p.parallel(cw.panels, workers)
	return cw
}

// convPairsLayout is the pair packing of a cout×cin×k weight for pk
// without its words (the count returned): what packConvWeightPairs fills
// and ConvWeightFrom maps.
func (e *Engine) convPairsLayout(pk *bf16Kernel, cout, cin, k int) (*ConvWeight, int) {
	cinP := roundUp(cin, 2)
	steps := cinP / 2 * k
	panels := ceilDiv(cout, pk.mr)
	cw := &ConvWeight{kern: e.convKernel(), m: cout, depth: cin * k, cin: cin, k: k, cinP: cinP, steps: steps, panels: panels, pk: pk}
	cw.kc = ceilDiv(steps, ceilDiv(steps, pk.kc))
	return cw, panels * pk.mr * steps
}

// minPackPerWorker is the fewest weight values worth a packing worker of
// their own: Kokoro's generator packs some 50 million at its first call,
// the largest part of a short first request's start-up.
const minPackPerWorker = 1 << 16

// pairPacker packs one weight for packConvWeightPairs, a micro-panel (mr
// rows) a task, block by block: a block's micro-panel (mr·kc words) stays
// in L1 while its rows are read in order.
type pairPacker struct {
	team
	cw *ConvWeight
	w  []float32
}

// panel packs micro-panel ir.
func (p *pairPacker) panel(ir, _ int) {
	cw := p.cw
	mr, k, cin := cw.pk.mr, cw.k, cw.cin
	for pc := 0; pc < cw.steps; pc += cw.kc {
		d := min(cw.kc, cw.steps-pc)
		pan := cw.pairs[pc*cw.panels*mr+ir*mr*d:][:mr*d]
		for i := 0; i < mr && ir*mr+i < cw.m; i++ {
			row := p.w[(ir*mr+i)*cin*k:][:cin*k]
			for s := range d {
				c, tap := (pc+s)/k, (pc+s)%k
				v := uint32(toBF16(row[2*c*k+tap]))
				if 2*c+1 < cin {
					v |= uint32(toBF16(row[(2*c+1)*k+tap])) << 16
				}
				pan[s*mr+i] = v
			}
		}
	}
}

// setupPairs lays out the window, the work split and the B offsets (one
// per pair step) of a pair-kernel call; amin and amax are the taps'
// extreme delays in input frames (see setup).
func (j *convJob) setupPairs(w *ConvWeight, s Conv1dShape, amax, threads int) {
	pk := w.pk
	flops := 2 * w.m * w.depth * s.Lout
	// Twice the float32 kernel's rate: the same work is worth half the
	// workers' start-up cost.
	j.split(s.Lout, w.panels, pk.nr, max(1, min(threads, flops/(2*minFlopsPerWorker))))
	j.width = roundUp(roundUp(j.colBlock, pk.nr)+amax-j.amin, 16)
	if cap(j.off) < w.steps {
		j.off = make([]int, w.steps)
	}
	j.off = j.off[:w.steps]
	S := s.Stride
	for c := 0; c < w.cinP/2; c++ {
		for k := 0; k < s.K; k++ {
			q := k*s.Dilation - s.PadLeft
			a := floorDiv(q, S)
			r := q - a*S
			j.off[c*s.K+k] = (c*S+r)*j.width + a - j.amin
		}
	}
}

// pairsTask runs task t of a pair-kernel convolution: the float32 task
// (see task) on the bfloat16 window.
func (j *convJob) pairsTask(t, slot int) {
	w, s, pk := j.w, j.s, j.w.pk
	mr, nr := pk.mr, pk.nr
	col, rowTask := t%j.colTasks, t/j.colTasks
	j0 := col * j.colBlock
	nb := min(j.colBlock, s.Lout-j0)
	p0 := rowTask * j.perTask
	p1 := min(w.panels, p0+j.perTask)

	ldc := roundUp(nb, nr)
	need := w.cinP/2*s.Stride*j.width + 16
	if cap(j.bwin[slot]) < need {
		j.bwin[slot] = make([]uint32, need)
	}
	if cn := (p1 - p0) * mr * ldc; cap(j.cbuf[slot]) < cn {
		j.cbuf[slot] = make([]float32, cn)
	}
	win, cbuf := j.bwin[slot][:need], j.cbuf[slot]
	j.fillWindowBF16(win, j0+j.amin)

	for pc := 0; pc < w.steps; pc += w.kc {
		d := min(w.kc, w.steps-pc)
		blk := w.pairs[pc*w.panels*mr:]
		off := &j.off[pc]
		beta := float32(1)
		if pc == 0 {
			beta = 0
		}
		for ir := p0; ir < p1; ir++ {
			a := &blk[ir*mr*d]
			c := cbuf[(ir-p0)*mr*ldc:]
			for jj := 0; jj < nb; jj += nr {
				pk.fn(d, a, &win[jj], off, &c[jj], ldc, beta)
			}
		}
	}
	j.writeOut(cbuf, ldc, p0*mr, min(w.m, p1*mr), j0, nb)
}
