package gemm

import (
	"fmt"
	"sync"
)

// Winograd's minimal filtering for 1-D convolutions of stride 1.
//
// F(m, K) computes m outputs of a K-tap correlation, y[s] = Σ_k w[k]·d[s+k],
// from α = m + K − 1 inputs with α products instead of m·K:
//
//	y = Aᵀ·[(G·w) ⊙ (Bᵀ·d)]
//
// with Aᵀ [m×α], G [α×K] and Bᵀ [α×α] built by Toom-Cook from α−1 real
// points and the point at infinity. Summed over input channels, the α
// elementwise products of each tile become α independent GEMMs,
//
//	M_ξ[co, tile] = Σ_ci U_ξ[co, ci]·V_ξ[ci, tile],  U_ξ = G·w[co, ci, :],  V_ξ = Bᵀ·d_tile[ci],
//
// so a K-tap convolution costs α/m multiply-adds per output and channel
// pair instead of K: 2.25× fewer for K = 3 (m = 6), 3.1× for K = 11 (m = 4),
// the taps of Kokoro's generator. A dilation D runs the same tiles over
// each of the D interleaved subsequences.
//
// The price is accuracy: the transforms' points grow with α, and so does the
// float32 rounding. Measured against a float64 direct convolution over 128
// channels of Gaussian data (TestWinogradMatchesFloat64 holds the bounds):
// relative error ~1e-6 for α = 8, ~1e-5 for α = 12 and ~1.5e-4 for α = 14,
// against ~6e-7 for the direct float32 convolution and ~4e-3 for bfloat16
// products. Callers choose it; Conv1d stays the exact-order oracle.
//
// WinogradConv1d works like Conv1d: each task takes a block of tiles of one
// residue, copies the input frames they read into a private window split
// into m phases (so that tile input i of consecutive tiles is one contiguous
// run, phase i mod m shifted by i div m), then for each ξ transforms the
// window into V_ξ, multiplies it by U_ξ with the offset microkernel (B rows
// read in place, as Conv1d reads its window) into M_ξ, and at the end
// transforms the α products of each output channel back into m phase rows,
// interleaved into y with the bias.

// winogradBudget bounds a task's α product blocks M_ξ (bytes): with the
// window and one V_ξ they stay in L2 while U streams through.
const winogradBudget = 512 << 10

// winogradPoints are the finite Toom-Cook points, in the order they are
// taken: small magnitudes and their reciprocals keep the transforms' entries
// (powers of the points) near 1.
var winogradPoints = [...]float64{0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 1.0 / 3, -1.0 / 3, 4, -4, 0.25, -0.25}

// winogradPlan holds the transforms of one F(m, k).
type winogradPlan struct {
	m, k, alpha int
	g           [][]float64 // G, α × k (applied to weights in float64)

	// The transforms as winoTransform takes them: row i holds the
	// coefficients of input i for each output, padded to winoMaxRows.
	inT  []float32 // Bᵀ transposed: [α][winoMaxRows]
	outT []float32 // Aᵀ transposed: [α][winoMaxRows]
}

// winoMaxRows is the most outputs one transform computes (α ≤ 14).
const winoMaxRows = 14

// HasWinogradKernels reports whether this CPU runs WinogradConv1d's
// transforms and shuffles in vector code (AVX-512). Elsewhere they run in
// plain Go, correct but unmeasured against Conv1d: callers choosing by
// speed should keep Conv1d there.
func HasWinogradKernels() bool { return winogradVectorized }

// WinogradTile returns the outputs per tile m that [Engine.WinogradConv1d]
// uses for a k-tap filter, or 0 where it has no plan for k.
func WinogradTile(k int) int {
	if p := winogradPlans()[k]; p != nil {
		return p.m
	}
	return 0
}

// winogradPlans is the registry of plans by taps, built once: m = 6 for
// 3 and 7 taps (α = 8, 12), m = 4 for 5, 9 and 11 (α = 8, 12, 14).
var winogradPlans = sync.OnceValue(func() map[int]*winogradPlan {
	plans := map[int]*winogradPlan{}
	for _, mk := range [][2]int{{6, 3}, {4, 5}, {6, 7}, {4, 9}, {4, 11}} {
		plans[mk[1]] = newWinogradPlan(mk[0], mk[1])
	}
	return plans
})

// newWinogradPlan builds F(m, k)'s transforms from the first α−1 points.
func newWinogradPlan(m, k int) *winogradPlan {
	alpha := m + k - 1
	n := alpha - 1 // finite points
	pts := winogradPoints[:n]
	pow := func(x float64, e int) float64 {
		r := 1.0
		for range e {
			r *= x
		}
		return r
	}
	p := &winogradPlan{m: m, k: k, alpha: alpha}
	// The transforms are stored transposed, as winoTransform reads them:
	// row i holds input i's coefficient for each output.
	p.inT = make([]float32, alpha*winoMaxRows)
	p.outT = make([]float32, alpha*winoMaxRows)
	// Aᵀ evaluates the product polynomial's m output coefficients: row s
	// is the points' s-th powers, the last row also takes the leading
	// coefficient (the point at infinity).
	for s := range m {
		for j, x := range pts {
			p.outT[j*winoMaxRows+s] = float32(pow(x, s))
		}
	}
	p.outT[n*winoMaxRows+m-1] = 1
	// G evaluates the filter at the points, divided by the Lagrange
	// denominators; its last row is the filter's leading tap.
	p.g = make([][]float64, alpha)
	for j, x := range pts {
		den := 1.0
		for l, y := range pts {
			if l != j {
				den *= x - y
			}
		}
		p.g[j] = make([]float64, k)
		for t := range k {
			p.g[j][t] = pow(x, t) / den
		}
	}
	p.g[n] = make([]float64, k)
	p.g[n][k-1] = 1
	// Bᵀ row j holds the coefficients of Π_{l≠j}(x − p_l); the last row
	// those of Π_l(x − p_l).
	for j := 0; j <= n; j++ {
		poly := []float64{1}
		for l, y := range pts {
			if l == j {
				continue
			}
			next := make([]float64, len(poly)+1)
			for i, c := range poly {
				next[i+1] += c
				next[i] -= c * y
			}
			poly = next
		}
		for i, c := range poly {
			p.inT[i*winoMaxRows+j] = float32(c)
		}
	}
	return p
}

// WinogradWeight is a convolution weight [Cout, Cin, K] transformed for
// [Engine.WinogradConv1d]: α matrices U_ξ [Cout, Cin], each padded to whole
// microkernel panels, packed as one [α·coutP, Cin] ConvWeight. It is
// immutable once packed and may be shared by concurrent calls.
type WinogradWeight struct {
	plan      *winogradPlan
	cout, cin int
	coutP     int // rows of each U_ξ block: cout rounded up to the microkernel's mr
	u         *ConvWeight
	_         [0]sync.Mutex // vet: no copies
}

// Bytes returns the packed size, for memory accounting.
func (w *WinogradWeight) Bytes() int { return w.u.Bytes() }

// Words returns the packed words as bytes, aliasing w's memory (see
// [Engine.WinogradFrom]).
func (w *WinogradWeight) Words() []byte { return w.u.Words() }

// winogradLayout checks a weight's shape and returns its plan and padded
// rows.
func (e *Engine) winogradLayout(cout, cin, k int) (*winogradPlan, int, error) {
	p := winogradPlans()[k]
	if p == nil || cout <= 0 || cin <= 0 {
		return nil, 0, fmt.Errorf("gemm: no Winograd plan for a %d×%d×%d weight", cout, cin, k)
	}
	return p, roundUp(cout, e.convKernel().mr), nil
}

// PackWinograd transforms and packs w, a PyTorch Conv1d weight [cout, cin,
// k] of one group, for [Engine.WinogradConv1d]; nil when [WinogradTile](k)
// is 0. The transform is computed in float64 and rounded once.
func (e *Engine) PackWinograd(cout, cin, k int, w []float32) *WinogradWeight {
	p, coutP, err := e.winogradLayout(cout, cin, k)
	if err != nil {
		return nil
	}
	checkLen("w", cout, cin*k, len(w), cin*k)
	u := make([]float32, p.alpha*coutP*cin)
	for xi, g := range p.g {
		for co := range cout {
			row := u[(xi*coutP+co)*cin:][:cin]
			for ci := range row {
				taps := w[(co*cin+ci)*k:][:k]
				var s float64
				for t, gt := range g {
					s += gt * float64(taps[t])
				}
				row[ci] = float32(s)
			}
		}
	}
	return &WinogradWeight{plan: p, cout: cout, cin: cin, coutP: coutP, u: e.PackConvWeight(p.alpha*coutP, cin, u, cin)}
}

// WinogradFrom returns the weight PackWinograd(cout, cin, k, w) would return
// on this engine, over words: the Words of such a packing made earlier on
// the same CPU path, used in place (see [Engine.ConvWeightFrom]).
func (e *Engine) WinogradFrom(cout, cin, k int, words []byte) (*WinogradWeight, error) {
	p, coutP, err := e.winogradLayout(cout, cin, k)
	if err != nil {
		return nil, err
	}
	u, err := e.ConvWeightFrom(p.alpha*coutP, cin, 1, false, words)
	if err != nil {
		return nil, err
	}
	return &WinogradWeight{plan: p, cout: cout, cin: cin, coutP: coutP, u: u}, nil
}

// WinogradConv1d computes what [Engine.Conv1d] computes for a weight packed
// by PackWinograd, by Winograd's minimal filtering (see the top of this
// file for its accuracy): y[co·ldy + t] = bias[co] + Σ_{ci,k} w[co, ci,
// k]·x[ci·ldx + t + k·Dilation − PadLeft]. The stride must be 1. y must not
// overlap x. Steady-state calls allocate nothing.
func (e *Engine) WinogradConv1d(w *WinogradWeight, s Conv1dShape, x []float32, ldx int, y []float32, ldy int, bias []float32) {
	if s.Cin != w.cin || s.K != w.plan.k || s.Stride != 1 || s.Dilation <= 0 || s.L < 0 || s.Lout < 0 {
		panic(fmt.Sprintf("gemm: WinogradConv1d: shape %+v for a %d×%d×%d weight (stride 1 only)", s, w.cout, w.cin, w.plan.k))
	}
	if s.Lout == 0 {
		return
	}
	if w.u.kern != e.convKernel() {
		panic("gemm: WinogradConv1d: weight packed for another engine's kernel")
	}
	checkConvIO("WinogradConv1d", s, w.cout, x, ldx, y, ldy, bias)
	j := e.winoJobs.Get().(*winoJob)
	j.setup(w, s, x, ldx, y, ldy, bias, e.threads)
	j.team.parallel(j.tasks, j.workers)
	j.x, j.y, j.bias, j.w = nil, nil, nil, nil // do not pin the caller's memory
	e.winoJobs.Put(j)
}

// winoJob carries one WinogradConv1d call to the workers; pooled per
// engine.
//
// A task takes a block of n tile columns of every residue b < D, the
// output frames [D·m·q0, D·m·(q0+n)) for its first tile q0: its window is
// that stretch of x split into S = D·m phases (phase φ = b + D·s holds
// frames φ + S·c), its output the same stretch of y, contiguous and apart
// from other tasks'.
type winoJob struct {
	team       team
	w          *WinogradWeight
	s          Conv1dShape
	x, y, bias []float32
	ldx, ldy   int
	workers    int

	n      int // tile columns per task and residue, a multiple of 32
	wp     int // the window's phase rows: n plus the tiles' reach, a multiple of 16
	stride int // S = D·m: frames between a phase's columns
	tasks  int

	inOffs  []int // residue b's tile input i in a channel's window at b·α + i
	outOffs []int // M_ξ in the product block
	off     []int // B row ci of V_ξ for the microkernel

	win, v, mb, tp [][]float32 // per worker slot: window, the V_ξ, the M_ξ, output phases
	edge           [][]float32 // per worker slot: a zero-padded stretch of x at its ends
}

func newWinoJob(e *Engine) *winoJob {
	j := &winoJob{win: make([][]float32, e.threads), v: make([][]float32, e.threads), mb: make([][]float32, e.threads), tp: make([][]float32, e.threads), edge: make([][]float32, e.threads)}
	j.team.init(j.task)
	return j
}

func (j *winoJob) setup(w *WinogradWeight, s Conv1dShape, x []float32, ldx int, y []float32, ldy int, bias []float32, threads int) {
	j.w, j.s, j.x, j.ldx, j.y, j.ldy, j.bias = w, s, x, ldx, y, ldy, bias
	p := w.plan
	D := s.Dilation
	j.stride = D * p.m
	tiles := ceilDiv(ceilDiv(s.Lout, D), p.m) // residue 0's, the most
	flops := 2 * p.alpha * w.coutP * w.cin * tiles * D
	j.workers = max(1, min(threads, flops/minFlopsPerWorker))
	// Columns per task: as many as the product blocks' budget allows,
	// fewer where that would leave a worker without two tasks.
	n := max(32, winogradBudget/(4*p.alpha*w.coutP)/32*32)
	if j.workers > 1 {
		n = min(n, roundUp(ceilDiv(tiles, 2*j.workers), 32))
	}
	j.n = n
	j.wp = roundUp(n+(p.alpha-1)/p.m+1, 16)
	j.tasks = ceilDiv(tiles, n)

	j.inOffs = j.inOffs[:0]
	for b := range D {
		for i := range p.alpha {
			j.inOffs = append(j.inOffs, (b+D*(i%p.m))*j.wp+i/p.m)
		}
	}
	j.outOffs = j.outOffs[:0]
	for xi := range p.alpha {
		j.outOffs = append(j.outOffs, xi*w.coutP*n)
	}
	j.off = j.off[:0]
	for ci := range w.cin {
		j.off = append(j.off, ci*n)
	}
}

func (j *winoJob) task(t, slot int) {
	w, s, p := j.w, j.s, j.w.plan
	kern := w.u.kern
	m, n, wp, S := p.m, j.n, j.wp, j.stride
	D := s.Dilation
	t0 := t * n * S // the task's first output frame

	grow := func(buf *[]float32, size int) []float32 {
		if cap(*buf) < size {
			*buf = make([]float32, size)
		}
		return (*buf)[:size]
	}
	// The window has room for the fast fill's spill past the last
	// channel (see fillPhases).
	win := grow(&j.win[slot], (w.cin*S+16)*wp)
	v := grow(&j.v[slot], p.alpha*w.cin*n)
	mb := grow(&j.mb[slot], p.alpha*w.coutP*n)
	tp := grow(&j.tp[slot], w.cout*S*n)

	for ci := range w.cin {
		fillPhases(win[ci*S*wp:], j.x[ci*j.ldx:ci*j.ldx+s.L], t0-s.PadLeft, S, wp, &j.edge[slot])
	}
	panelsPer := w.coutP / kern.mr
	vstride := w.cin * n
	for b := range D {
		// V_ξ[ci, c] = Σ_i Bᵀ[ξ, i]·input i of tile c, all ξ at once.
		for ci := range w.cin {
			transform(v[ci*n:], vstride, win[ci*S*wp:], j.inOffs[b*p.alpha:(b+1)*p.alpha], p.inT, p.alpha, n)
		}
		for xi := range p.alpha {
			vx := v[xi*vstride:]
			for pc := 0; pc < w.cin; pc += w.u.kc {
				blk, depth := w.u.block(pc)
				beta := float32(1)
				if pc == 0 {
					beta = 0
				}
				for ip := range panelsPer {
					a := &blk[(xi*panelsPer+ip)*kern.mr*depth]
					c := mb[(xi*w.coutP+ip*kern.mr)*n:]
					for jj := 0; jj < n; jj += kern.nr {
						kern.offFn(depth, a, &vx[jj], &j.off[pc], &c[jj], n, beta)
					}
				}
			}
		}
		// Output phase b + D·s of channel co is Σ_ξ Aᵀ[s, ξ]·M_ξ[co].
		for co := range w.cout {
			transform(tp[(co*S+b)*n:], D*n, mb[co*n:], j.outOffs, p.outT, m, n)
		}
	}
	valid := min(S*n, s.Lout-t0)
	for co := range w.cout {
		var bc float32
		if j.bias != nil {
			bc = j.bias[co]
		}
		scatterPhases(j.y[co*j.ldy+t0:][:valid], tp[co*S*n:(co+1)*S*n], S, n, bc)
	}
}

// transform sets dst[r·dstStride + j] = Σ_i coefT[i·winoMaxRows + r]·
// src[offs[i] + j] for r < outs, j < cols: on winoTransform's kernel where
// there is one, else in Go, with the same order of terms.
func transform(dst []float32, dstStride int, src []float32, offs []int, coefT []float32, outs, cols int) {
	if winoTransform(dst, dstStride, src, offs, coefT, outs, cols) {
		return
	}
	for r := range outs {
		row := dst[r*dstStride:][:cols]
		clear(row)
		for i, o := range offs {
			c := coefT[i*winoMaxRows+r]
			for jj, x := range src[o : o+cols] {
				row[jj] += c * x
			}
		}
	}
}

// fillPhases sets rows[φ·wp + c] = x[start + φ + S·c] for φ < S, c < wp,
// zero where that frame is outside x. The AVX-512 transposes may write up
// to 16·wp more floats past the S rows; a stretch that reaches past either
// end of x is first copied into edge, zero-padded, so that they can read
// it whole.
func fillPhases(rows, x []float32, start, S, wp int, edge *[]float32) {
	if start >= 0 && deinterleave(rows, x[start:], S, wp) {
		return
	}
	need := S*(wp-1) + (S-1)/16*16 + 16 // what deinterleave reads
	if cap(*edge) < need {
		*edge = make([]float32, need)
	}
	e := (*edge)[:need]
	lo, hi := max(0, -start), min(need, len(x)-start) // x's part of the stretch
	if hi <= lo {
		clear(e)
	} else {
		clear(e[:lo])
		copy(e[lo:hi], x[start+lo:start+hi])
		clear(e[hi:])
	}
	if deinterleave(rows, e, S, wp) {
		return
	}
	for c := range wp {
		for φ := range S {
			rows[φ*wp+c] = e[φ+S*c]
		}
	}
}

// scatterPhases sets y[φ + S·c] = tp[φ·n + c] + bias for every frame of y.
func scatterPhases(y, tp []float32, S, n int, bias float32) {
	done := interleave(y, tp, S, n)
	for u := done; u < len(y); u++ {
		y[u] = tp[(u%S)*n+u/S]
	}
	if bias != 0 {
		addScalarTo(y, y, bias)
	}
}
