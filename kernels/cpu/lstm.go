package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// lstm implements OpLSTM. The input projection of all time steps is one
// GEMM per direction; each step then adds h·W_hhᵀ and applies the gates in
// PyTorch order (i, f, g, o). Two directions run concurrently; one runs on
// the calling goroutine with pooled scratch, so a streaming step (T = 1)
// allocates nothing.
func (b *Backend) lstm(s *kernels.Step, bufs []kernels.Buffer) error {
	a, ok := s.Attr.(kernels.LSTMAttr)
	if !ok {
		return fmt.Errorf("cpu: lstm: missing attributes")
	}
	r := lstmRun{b: b, s: s, bufs: bufs, a: a, D: 1}
	if a.Bidirectional {
		r.D = 2
	}
	xv := s.In[0]
	r.T, r.B, r.I = xv.Shape[0], xv.Shape[1], xv.Shape[2]
	if a.BatchFirst {
		r.T, r.B = r.B, r.T
	}
	if r.D == 1 || b.threads == 1 {
		for d := 0; d < r.D; d++ {
			r.dir(d)
		}
		return nil
	}
	shared := r // only the concurrent path moves the run to the heap
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		shared.dir(1)
	}()
	runtime.Gosched() // another P starts at once (see gemm's team.parallel)
	shared.dir(0)
	wg.Wait()
	return nil
}

// lstmRun is one launch of an LSTM.
type lstmRun struct {
	b       *Backend
	s       *kernels.Step
	bufs    []kernels.Buffer
	a       kernels.LSTMAttr
	D       int // directions
	T, B, I int // steps, batch, input size
}

// lstmScratch is one direction's working memory.
type lstmScratch struct{ f []float32 }

var lstmPool = sync.Pool{New: func() any { return new(lstmScratch) }}

// dir runs direction d (1: backwards in time) over every step.
func (r lstmRun) dir(d int) {
	s, bufs, a, D, T, B, I := r.s, r.bufs, r.a, r.D, r.T, r.B, r.I
	H := a.Hidden
	h0v, c0v := s.In[1+4*D], s.In[2+4*D]
	xv, yv, hv, cv := s.In[0], s.Out[0], s.Out[1], s.Out[2]
	x := f32s(bufs, xv)[xv.Offset:]
	y := f32s(bufs, yv)[yv.Offset:]
	hN := f32s(bufs, hv)[hv.Offset:]
	cN := f32s(bufs, cv)[cv.Offset:]
	h0 := f32s(bufs, h0v)[h0v.Offset:]
	c0 := f32s(bufs, c0v)[c0v.Offset:]
	in := func(k int) []float32 { v := s.In[1+4*d+k]; return f32s(bufs, v)[v.Offset:] }
	wih, whh, bih, bhh := in(0), in(1), in(2), in(3)

	sc := lstmPool.Get().(*lstmScratch)
	defer lstmPool.Put(sc)
	need := T*B*4*H + 2*B*H + B*4*H + H + 4*H
	if cap(sc.f) < need {
		sc.f = make([]float32, need)
	}
	f := sc.f[:need]
	take := func(n int) []float32 { v := f[:n:n]; f = f[n:]; return v }
	gx, h, c, gates, tc, bias := take(T*B*4*H), take(B*H), take(B*H), take(B*4*H), take(H), take(4*H)

	// gx[row] = x[row]·W_ihᵀ (rows in x's own order), with W_ih packed
	// once per backend when it is a constant on the Go GEMM path.
	e := gemm.Default()
	switch {
	case T*B == 0 || I == 0:
		clear(gx)
	case T*B > 1 && !e.UsesBLAS():
		if pb := r.b.packedSGEMMB(bufs, s.In[1+4*d], I, 4*H, true, I); pb != nil {
			e.SGEMMPackedB(false, T*B, x, I, pb, gx, 4*H)
			break
		}
		fallthrough
	default:
		e.SGEMM(false, true, T*B, 4*H, I, 1, x, I, wih, I, 0, gx, 4*H)
	}
	// The steps' products are small and sequential: with both directions
	// running concurrently, each runs them on its own goroutine rather
	// than waking another per step.
	rec := e
	if r.D == 2 && r.b.threads > 1 {
		rec = serialGEMM()
	}
	copy(h, h0[d*B*H:(d+1)*B*H])
	copy(c, c0[d*B*H:(d+1)*B*H])
	for j := range bias {
		bias[j] = bih[j] + bhh[j]
	}
	for step := 0; step < T; step++ {
		t := step
		if d == 1 {
			t = T - 1 - step
		}
		// gates = h·W_hhᵀ, then + gx + biases
		if B == 1 && rec != e {
			recurrent(rec, gates, h, whh, H, step%2 == 1)
		} else {
			rec.SGEMM(false, true, B, 4*H, H, 1, h, H, whh, H, 0, gates, 4*H)
		}
		for bi := 0; bi < B; bi++ {
			g := gates[bi*4*H : (bi+1)*4*H]
			// Index of the x[t, bi, :] / y[t, bi, :] rows.
			row := t*B + bi
			if a.BatchFirst {
				row = bi*T + t
			}
			gxr := gx[row*4*H : (row+1)*4*H]
			for j := range g {
				g[j] += gxr[j] + bias[j]
			}
			vmath.Sigmoid(g[:2*H], g[:2*H])
			vmath.Tanh(g[2*H:3*H], g[2*H:3*H])
			vmath.Sigmoid(g[3*H:], g[3*H:])
			hb, cb := h[bi*H:(bi+1)*H], c[bi*H:(bi+1)*H]
			for j := 0; j < H; j++ {
				cb[j] = g[H+j]*cb[j] + g[j]*g[2*H+j]
			}
			vmath.Tanh(tc, cb)
			for j := 0; j < H; j++ {
				hb[j] = g[3*H+j] * tc[j]
			}
			copy(y[row*D*H+d*H:row*D*H+(d+1)*H], hb)
		}
	}
	copy(hN[d*B*H:(d+1)*B*H], h)
	copy(cN[d*B*H:(d+1)*B*H], c)
}

// recurrentBlock is how many rows of W_hh recurrent reads per product.
const recurrentBlock = 128

// recurrent computes one step's gates = h·W_hhᵀ (one sequence) on the
// serial engine rec, the rows of W_hh in blocks: from the first on even
// steps and from the last on odd ones. A W_hh of Kokoro's 256-wide LSTMs
// is 1 MB, as large as a core's L2, and read whole every step: scanning it
// the same way each time evicts each row just before its next use, while
// turning back rereads first the rows read last, still in cache. Each gate
// is the same dot product in either order.
func recurrent(rec *gemm.Engine, gates, h, whh []float32, H int, backwards bool) {
	n := 4 * H
	blocks := (n + recurrentBlock - 1) / recurrentBlock
	for i := range blocks {
		q := i
		if backwards {
			q = blocks - 1 - i
		}
		j0 := q * recurrentBlock
		rows := min(recurrentBlock, n-j0)
		rec.SGEMM(false, true, 1, rows, H, 1, h, H, whh[j0*H:], H, 0, gates[j0:], rows)
	}
}
