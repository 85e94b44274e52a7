package gemm

import (
	"fmt"
	"unsafe"

	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// Implicit-GEMM 1-D convolution.
//
// A convolution y[co, t] = Σ_{ci,k} w[co, ci, k]·x[ci, t·S + k·D − P] is the
// product of the weight A = w as [Cout, Cin·K] with the im2col matrix
// B[(ci,k), t]. Conv1d never builds B. Each task of the call takes a block
// of output columns, copies the input frames that block reads into a
// private window (zero outside the input, split into S phases for a stride
// S so that every B row is one contiguous run of the window), and the
// offset microkernel reads each B row straight from the window: row
// (ci, k) starts at window row (ci·S + phase(k)) shifted by the tap's
// delay, an entry of a per-call offset table. Every input frame is copied
// once per column block, instead of K times (im2col) and once more
// (packing B).
//
// The weight is packed once, by PackConvWeight, into the microkernel's A
// layout split into depth blocks; a backend keeps it for constant weights.
//
//	for each task = (column block, range of A micro-panels), in parallel
//	  fill the window from x
//	  for each depth block
//	    for each A micro-panel of the task            (L1)
//	      for each nr-column sliver of the block      (B rows from the window: L1/L2)
//	        offset microkernel: C tile (+)= A panel · B rows   (into a private C block)
//	  copy the C block out, adding the bias
//
// On this loop order and block sizes: measured on Kokoro's generator
// shapes (BenchmarkConv1d), the panel-outer order was 5–15% faster than
// sliver-outer, and column blocks of 128–512 and depth blocks of 192–384
// were within the noise of a shared machine. Accumulating in a private C
// block (whole tiles, so no edge cases) and writing the output rows once
// gained 5–10%, huge pages for the tensors (see kernels/cpu) 10–15%: the
// output rows lie far apart, each a TLB miss.

// convCols is the widest column block of one convolution task: the window
// of 128 channels (plus the taps' reach) stays in L2, and a long sequence
// splits into enough tasks to balance the workers dynamically.
const convCols = 256

// ConvWeight is a convolution weight [Cout, Cin·K] packed for
// [Engine.Conv1d]: depth blocks of A micro-panels for one microkernel. It is
// immutable once packed and may be shared by concurrent calls.
type ConvWeight struct {
	kern   *sgemmKernel
	m      int       // Cout
	depth  int       // Cin·K
	kc     int       // depth of every block but the last
	panels int       // A micro-panels: ceil(m/mr)
	data   []float32 // block b at b·kc·panels·mr: panels × (mr × its depth)

	// The AMX form (PackConvWeightBF16) instead: A tiles [16-row block]
	// [step] [16][32] in bfloat16, steps = k·cinP/32.
	bf           []uint16
	cin, k, cinP int
	steps        int

	// The pair form (PackConvWeightBF16 without AMX, see convpairs.go):
	// depth blocks of kc pair steps (steps = k·cinP/2), each of panels A
	// micro-panels for pk, a uint32 of two bfloat16 per row and step.
	pairs []uint32
	pk    *bf16Kernel
}

// BF16 reports whether the weight was packed for a bfloat16 path (AMX
// tiles or bfloat16 pair instructions).
func (w *ConvWeight) BF16() bool { return w.bf != nil || w.pairs != nil }

// Rows returns the number of output channels (Cout).
func (w *ConvWeight) Rows() int { return w.m }

// Depth returns Cin·K, the length of one output channel's receptive field.
func (w *ConvWeight) Depth() int { return w.depth }

// Bytes returns the packed size, for memory accounting.
func (w *ConvWeight) Bytes() int { return 4*len(w.data) + 2*len(w.bf) + 4*len(w.pairs) }

// convKernel returns the engine's microkernel for convolutions: the Go
// kernel it runs (also set, to the best for the CPU, when its SGEMM goes to
// a BLAS, which has no implicit-GEMM convolution), or the portable one
// where that kernel has no offset form.
func (e *Engine) convKernel() *sgemmKernel {
	if e.kern.offFn != nil {
		return e.kern
	}
	return genericKernel
}

// ConvPath names the microkernel [Engine.Conv1d] runs, e.g. "go-avx512";
// "go" means the portable kernel, for which an im2col convolution on a BLAS
// is faster.
func (e *Engine) ConvPath() string { return e.convKernel().name }

// PackConvWeight packs w, Cout rows of Cin·K values (row stride ldw, as a
// PyTorch Conv1d weight [Cout, Cin, K] of one group is stored), for
// [Engine.Conv1d].
func (e *Engine) PackConvWeight(cout, depth int, w []float32, ldw int) *ConvWeight {
	cw := new(ConvWeight)
	e.PackConvWeightInto(cw, cout, depth, w, ldw)
	return cw
}

// PackConvWeightInto is PackConvWeight into dst, reusing its memory: for
// weights computed at run time, which are packed on every call.
func (e *Engine) PackConvWeightInto(dst *ConvWeight, cout, depth int, w []float32, ldw int) {
	if cout <= 0 || depth <= 0 {
		panic(fmt.Sprintf("gemm: PackConvWeight: %d×%d weight", cout, depth))
	}
	checkLD("w", depth, ldw)
	checkLen("w", cout, depth, len(w), ldw)
	data := dst.data
	*dst = e.convF32Layout(cout, depth)
	n := dst.panels * dst.kern.mr * depth
	if cap(data) < n {
		data = make([]float32, n)
	}
	dst.data = data[:n]
	k, panels := dst.kern, dst.panels
	for pc := 0; pc < depth; pc += dst.kc {
		d := min(dst.kc, depth-pc)
		blk := dst.data[pc*panels*k.mr:]
		for ir := 0; ir < panels; ir++ {
			i0 := ir * k.mr
			packPanel(blk[ir*k.mr*d:(ir+1)*k.mr*d], k.mr, min(k.mr, cout-i0), d, w, ldw, i0, pc, false)
		}
	}
}

// convF32Layout is the float32 packing of a cout×depth weight without its
// words (panels·mr·depth of them): what PackConvWeightInto fills and
// ConvWeightFrom maps.
func (e *Engine) convF32Layout(cout, depth int) ConvWeight {
	k := e.convKernel()
	cw := ConvWeight{kern: k, m: cout, depth: depth, panels: ceilDiv(cout, k.mr)}
	cw.kc = ceilDiv(depth, ceilDiv(depth, k.kc))
	return cw
}

// block returns depth block b's panels and its depth.
func (w *ConvWeight) block(pc int) ([]float32, int) {
	return w.data[pc*w.panels*w.kern.mr:], min(w.kc, w.depth-pc)
}

// Conv1dShape describes one convolution of [Engine.Conv1d]: x holds Cin
// channels of L frames, the kernel K taps; output frame t reads input
// frames t·Stride + k·Dilation − PadLeft for k < K (zero outside [0, L)).
type Conv1dShape struct {
	Cin, L                    int
	K                         int
	Stride, Dilation, PadLeft int
	Lout                      int
}

func (s Conv1dShape) check(w *ConvWeight) {
	if s.Cin <= 0 || s.L < 0 || s.K <= 0 || s.Stride <= 0 || s.Dilation <= 0 || s.Lout < 0 {
		panic(fmt.Sprintf("gemm: Conv1d: invalid shape %+v", s))
	}
	if s.Cin*s.K != w.depth {
		panic(fmt.Sprintf("gemm: Conv1d: weight depth %d ≠ Cin·K = %d·%d", w.depth, s.Cin, s.K))
	}
	if w.BF16() && (s.Cin != w.cin || s.K != w.k) {
		panic(fmt.Sprintf("gemm: Conv1d: bfloat16 weight for %d channels × %d taps, shape has %d × %d", w.cin, w.k, s.Cin, s.K))
	}
}

// Conv1d computes y[co·ldy + t] = bias[co] + Σ_{ci,k} w[co, ci·K + k] ·
// x[ci·ldx + t·Stride + k·Dilation − PadLeft] for co < w.Rows(), t < Lout,
// input frames outside [0, L) reading as zero; bias may be nil. y must not
// overlap x. Steady-state calls allocate nothing.
func (e *Engine) Conv1d(w *ConvWeight, s Conv1dShape, x []float32, ldx int, y []float32, ldy int, bias []float32) {
	s.check(w)
	if s.Lout == 0 {
		return
	}
	if w.kern != e.convKernel() {
		panic("gemm: Conv1d: weight packed for another engine's kernel")
	}
	checkConvIO("Conv1d", s, w.m, x, ldx, y, ldy, bias)
	j := e.convJobs.Get().(*convJob)
	j.setup(w, s, x, ldx, y, ldy, bias, e.threads)
	j.team.parallel(j.colTasks*j.rowTasks, j.workers)
	j.x, j.y, j.bias, j.w = nil, nil, nil, nil // do not pin the caller's memory
	e.convJobs.Put(j)
}

// checkConvIO panics unless x holds s.Cin rows of s.L frames (row stride
// ldx), y rows rows of s.Lout (ldy), and bias, where there is one, rows
// values.
func checkConvIO(what string, s Conv1dShape, rows int, x []float32, ldx int, y []float32, ldy int, bias []float32) {
	checkLD("x", s.L, ldx)
	checkLD("y", s.Lout, ldy)
	checkLen("x", s.Cin, s.L, len(x), ldx)
	checkLen("y", rows, s.Lout, len(y), ldy)
	if bias != nil && len(bias) < rows {
		panic(fmt.Sprintf("gemm: %s: len(bias) = %d < %d", what, len(bias), rows))
	}
}

// convJob carries one Conv1d call to the workers; pooled per engine.
type convJob struct {
	team  team
	w     *ConvWeight
	s     Conv1dShape
	x, y  []float32
	bias  []float32
	ldx   int
	ldy   int
	amx   bool // the weight is in AMX form
	pairs bool // the weight is in pair form

	// Window geometry: window row (ci·Stride + r) holds input frames
	// Stride·(u + u0) + r for u < width, with u0 = j0 + amin for the
	// task's first column j0.
	amin, width        int
	off                []int // B row p = (ci, k) → its start in the window
	workers            int
	colBlock, colTasks int
	rowTasks, perTask  int // A micro-panels per row task

	win  [][]float32 // per worker slot: the input window
	bwin [][]uint32  // per worker slot: the bfloat16 window (AMX, pairs)
	cbuf [][]float32 // per worker slot: the task's C block
}

func newConvJob(e *Engine) *convJob {
	j := &convJob{win: make([][]float32, e.threads), bwin: make([][]uint32, e.threads), cbuf: make([][]float32, e.threads)}
	j.team.init(j.task)
	return j
}

// floorDiv and floorMod round toward −∞ (the taps' delays can be negative).
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (j *convJob) setup(w *ConvWeight, s Conv1dShape, x []float32, ldx int, y []float32, ldy int, bias []float32, threads int) {
	kern := w.kern
	j.w, j.s, j.x, j.ldx, j.y, j.ldy, j.bias = w, s, x, ldx, y, ldy, bias

	// Tap k reads frame Stride·(t + a_k) + r_k with q_k = k·D − P =
	// Stride·a_k + r_k, 0 ≤ r_k < Stride.
	S := s.Stride
	amin, amax := 0, 0
	for k := 0; k < s.K; k++ {
		a := floorDiv(k*s.Dilation-s.PadLeft, S)
		if k == 0 || a < amin {
			amin = a
		}
		if k == 0 || a > amax {
			amax = a
		}
	}
	j.amin = amin
	j.amx, j.pairs = w.bf != nil, w.pairs != nil
	switch {
	case j.amx:
		j.setupAMX(w, s, threads)
		return
	case j.pairs:
		j.setupPairs(w, s, amax, threads)
		return
	}

	flops := 2 * w.m * w.depth * s.Lout
	j.split(s.Lout, w.panels, kern.nr, max(1, min(threads, flops/minFlopsPerWorker)))

	// The kernel reads nr columns of every sliver, the last one included.
	j.width = roundUp(roundUp(j.colBlock, kern.nr)+amax-amin, 16)
	if cap(j.off) < w.depth {
		j.off = make([]int, w.depth)
	}
	j.off = j.off[:w.depth]
	for ci := 0; ci < s.Cin; ci++ {
		for k := 0; k < s.K; k++ {
			q := k*s.Dilation - s.PadLeft
			a := floorDiv(q, S)
			r := q - a*S
			j.off[ci*s.K+k] = (ci*S+r)*j.width + a - amin
		}
	}
}

// split divides a call of lout columns (in slivers of nr) and panels row
// panels into tasks for workers: column blocks of at most convCols, and
// for short sequences narrower blocks first, then row tasks of perTask
// panels. With several workers the column blocks are as many as a
// multiple of the workers and about equal (see balancedBlock).
func (j *convJob) split(lout, panels, nr, workers int) {
	j.workers = workers
	cols := roundUp(lout, nr)
	j.colBlock = min(cols, convCols)
	if j.workers > 1 && cols/j.colBlock < j.workers {
		j.colBlock = roundUp(ceilDiv(cols, j.workers), nr)
	}
	if b := balancedBlock(lout, nr, workers); b > 0 {
		j.colBlock = b
	}
	j.colTasks = ceilDiv(lout, j.colBlock)
	j.rowTasks = 1
	if j.colTasks < j.workers {
		j.rowTasks = min(panels, ceilDiv(j.workers, j.colTasks))
	}
	j.perTask = ceilDiv(panels, j.rowTasks)
	j.rowTasks = ceilDiv(panels, j.perTask)
}

// balancedBlock returns a column block for lout columns that splits them
// into a multiple of workers tasks of about equal width: for the fewest
// tasks t (a multiple of workers, blocks of at most convCols) whose width
// lout/t, rounded up to nr, still gives a multiple of workers blocks. It
// returns 0 where workers ≤ 1 or no t does. The dynamic scheduling evens
// out many tasks, not three: Kokoro's generator split 700 frames as 256,
// 256 and 188, one of two workers idle for a quarter of each convolution;
// 192, 192, 192 and 124 now.
func balancedBlock(lout, nr, workers int) int {
	if workers <= 1 || lout <= 0 {
		return 0
	}
	slivers := ceilDiv(lout, nr)
	for t := roundUp(ceilDiv(slivers*nr, convCols), workers); t <= slivers; t += workers {
		b := roundUp(ceilDiv(lout, t), nr)
		if ceilDiv(lout, b)%workers == 0 {
			return b
		}
	}
	return 0
}

func (j *convJob) task(t, slot int) {
	switch {
	case j.amx:
		j.amxTask(t, slot)
		return
	case j.pairs:
		j.pairsTask(t, slot)
		return
	}
	w, s := j.w, j.s
	kern := w.kern
	mr, nr := kern.mr, kern.nr
	col, rowTask := t%j.colTasks, t/j.colTasks
	j0 := col * j.colBlock
	nb := min(j.colBlock, s.Lout-j0)
	p0 := rowTask * j.perTask
	p1 := min(w.panels, p0+j.perTask)

	// The task's C block is accumulated in a private buffer of whole
	// tiles (rows and columns padded), then copied out with the bias: the
	// output's rows are far apart, and writing them once instead of once
	// per depth block spares TLB misses.
	ldc := roundUp(nb, nr)
	need := s.Cin*s.Stride*j.width + 16
	if cap(j.win[slot]) < need {
		j.win[slot] = make([]float32, need)
	}
	if cn := (p1 - p0) * mr * ldc; cap(j.cbuf[slot]) < cn {
		j.cbuf[slot] = make([]float32, cn)
	}
	win, cbuf := j.win[slot][:need], j.cbuf[slot]
	j.fillWindow(win, j0+j.amin)

	for pc := 0; pc < w.depth; pc += w.kc {
		blk, depth := w.block(pc)
		off := &j.off[pc]
		beta := float32(1)
		if pc == 0 {
			beta = 0
		}
		for ir := p0; ir < p1; ir++ {
			a := &blk[ir*mr*depth]
			c := cbuf[(ir-p0)*mr*ldc:]
			for jj := 0; jj < nb; jj += nr {
				kern.offFn(depth, a, &win[jj], off, &c[jj], ldc, beta)
			}
		}
	}
	j.writeOut(cbuf, ldc, p0*mr, min(w.m, p1*mr), j0, nb)
}

// writeOut copies output rows [r0, r1) of a task's C block (rows ldc
// apart, the first row r0) to y at column j0, nb columns, adding the bias.
func (j *convJob) writeOut(cbuf []float32, ldc, r0, r1, j0, nb int) {
	y, ldy := j.y, j.ldy
	for co := r0; co < r1; co++ {
		dst := y[co*ldy+j0 : co*ldy+j0+nb]
		src := cbuf[(co-r0)*ldc:][:nb]
		if j.bias != nil {
			addScalarTo(dst, src, j.bias[co])
		} else {
			copy(dst, src)
		}
	}
}

// fillWindow copies the input frames of a column block into win: row
// (ci·S + r), element u, is x[ci, S·(u + u0) + r], zero outside [0, L).
func (j *convJob) fillWindow(win []float32, u0 int) {
	s, W := j.s, j.width
	S := s.Stride
	for ci := 0; ci < s.Cin; ci++ {
		xr := j.x[ci*j.ldx : ci*j.ldx+s.L]
		for r := 0; r < S; r++ {
			row := win[(ci*S+r)*W : (ci*S+r+1)*W]
			if S == 1 {
				lo := min(max(0, -u0), W)     // window elements before the input
				hi := max(lo, min(W, s.L-u0)) // end of the input in the window
				clear(row[:lo])
				copy(row[lo:hi], xr[u0+lo:u0+hi])
				clear(row[hi:])
				continue
			}
			for u := range row {
				if i := S*(u+u0) + r; i >= 0 && i < s.L {
					row[u] = xr[i]
				} else {
					row[u] = 0
				}
			}
		}
	}
}

// offsetKernel is the convolution form of the microkernel (see
// microKernel): B row p is not packed but read at b + off[p]:
//
//	c[i*ldc+j] = Σ_p a[p*mr+i]·b[off[p]+j] + beta·c[i*ldc+j]
//
// for i < mr, j < nr, p < k (k ≥ 1); C is not read when beta == 0.
type offsetKernel func(k int, a, b *float32, off *int, c *float32, ldc int, beta float32)

// offsetGo4x4 is the portable offset microkernel.
func offsetGo4x4(k int, a, b *float32, off *int, c *float32, ldc int, beta float32) {
	as := unsafe.Slice(a, 4*k)
	offs := unsafe.Slice(off, k)
	var acc [4][4]float32
	for p, o := range offs {
		bp := (*[4]float32)(unsafe.Add(unsafe.Pointer(b), 4*o))
		ap := as[4*p : 4*p+4 : 4*p+4]
		for i, av := range ap {
			for x, bv := range bp {
				acc[i][x] += av * bv
			}
		}
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	for i := range acc {
		storeRow4(cs[i*ldc:i*ldc+4:i*ldc+4], 1, beta, acc[i][0], acc[i][1], acc[i][2], acc[i][3])
	}
}

// addScalarTo sets dst[i] = src[i] + v.
func addScalarTo(dst, src []float32, v float32) { vmath.Affine(dst, src, 1, v) }
