package cpu

import (
	"fmt"
	"sync"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// serialGEMM is the process-wide single-threaded Go GEMM that attention
// tasks call from their own goroutines (the parallelism is over tasks).
var serialGEMM = sync.OnceValue(func() *gemm.Engine {
	e, err := gemm.NewGo(1, "")
	if err != nil {
		panic(err) // "" always names an available kernel
	}
	return e
})

// attnScoreFloats bounds one task's score block (query rows × keys) so it
// stays in L2 between the two products.
const attnScoreFloats = 1 << 18

// attnRowGrain rounds query blocks to whole row tiles of the AVX-512 GEMM
// microkernel (12×32).
const attnRowGrain = 12

// attnParallelMACs is the least work (multiply-adds of both products, all
// batch items) worth spreading over the threads. A decoder step's
// self-attention (6 heads, 1 query, a few dozen keys: ~25k) costs a few
// microseconds on one core, and handing half of it to another goroutine
// took some 20 µs a call in Whisper tiny's step on the 2-core EPYC: the
// other core's thread sleeps between the step's phases.
const attnParallelMACs = 1 << 17

var attnScratch = sync.Pool{New: func() any { return new([]float32) }}

// attention implements OpAttention: for each batch item and block of query
// rows, S = Q·Kᵀ (+ mask), a softmax along each row of S, then S·V, with
// the tasks spread over the backend's threads.
func (b *Backend) attention(s *kernels.Step, bufs []kernels.Buffer) error {
	qv, kv, vv, out := s.In[0], s.In[1], s.In[2], s.Out[0]
	r := len(out.Shape)
	n, dv := out.Shape[r-2], out.Shape[r-1]
	d, keys := qv.Shape[r-1], kv.Shape[r-2]
	batch := 1
	for _, x := range out.Shape[:r-2] {
		batch *= x
	}
	if batch*n*dv == 0 {
		return nil
	}
	tq, ldq, err := kernels.GemmLayout(qv)
	if err != nil {
		return fmt.Errorf("cpu: attention q: %w", err)
	}
	tk, ldk, err := kernels.GemmLayout(kv)
	if err != nil {
		return fmt.Errorf("cpu: attention k: %w", err)
	}
	tv, ldv, err := kernels.GemmLayout(vv)
	if err != nil {
		return fmt.Errorf("cpu: attention v: %w", err)
	}
	// The mask's [n, s] rows are dense (the graph copies it so); a mask
	// with batch axes moves by its batch strides.
	var mask []float32
	var mv kernels.View
	if len(s.In) > 3 {
		mv = s.In[3]
		mr := len(mv.Shape)
		if (mr != 2 && mr != r) || mv.Shape[mr-2] != n || mv.Shape[mr-1] != keys || mv.Strides[mr-2] != keys || mv.Strides[mr-1] != 1 {
			return fmt.Errorf("cpu: attention: mask %v (strides %v) is not [n, s] rows of %d×%d, dense", mv.Shape, mv.Strides, n, keys)
		}
		mask = f32s(bufs, mv)
	}
	q, k, v, o := f32s(bufs, qv), f32s(bufs, kv), f32s(bufs, vv), f32s(bufs, out)
	blk := attnScoreFloats / max(keys, 1)
	if blk >= 2*attnRowGrain {
		blk -= blk % attnRowGrain
	}
	blk = max(1, min(n, blk))
	blocks := (n + blk - 1) / blk
	// offsets returns the element offsets of batch item i in q, k, v and
	// the mask.
	offsets := func(i int) (int, int, int, int) {
		qo, ko, vo, mo := qv.Offset, kv.Offset, vv.Offset, mv.Offset
		for a := r - 3; a >= 0; a-- {
			x := i % out.Shape[a]
			i /= out.Shape[a]
			qo += x * qv.Strides[a]
			ko += x * kv.Strides[a]
			vo += x * vv.Strides[a]
			if len(mv.Shape) == r {
				mo += x * mv.Strides[a]
			}
		}
		return qo, ko, vo, mo
	}
	// A row-major q block starts i0 rows down; a transposed one i0 columns.
	qRow := ldq
	if tq {
		qRow = 1
	}
	run := func(lo, hi int) {
		e := serialGEMM()
		sp := attnScratch.Get().(*[]float32)
		if cap(*sp) < blk*keys {
			*sp = make([]float32, blk*keys)
		}
		sc := (*sp)[:blk*keys]
		for t := lo; t < hi; t++ {
			item, i0 := t/blocks, (t%blocks)*blk
			m := min(blk, n-i0)
			qo, ko, vo, mo := offsets(item)
			sm := sc[:m*keys]
			// S = Q·Kᵀ: k stored [keys, d] row-major is Kᵀ transposed.
			e.SGEMM(tq, !tk, m, keys, d, 1, q[qo+i0*qRow:], ldq, k[ko:], ldk, 0, sm, keys)
			for row := range m {
				x := sm[row*keys : (row+1)*keys]
				if mask != nil {
					mr := mask[mo+(i0+row)*keys : mo+(i0+row+1)*keys]
					for j := range x {
						x[j] += mr[j]
					}
				}
				softmaxRow(x, x, false)
			}
			oo := out.Offset + item*n*dv + i0*dv
			e.SGEMM(false, tv, m, dv, keys, 1, sm, keys, v[vo:], ldv, 0, o[oo:oo+m*dv], dv)
		}
		attnScratch.Put(sp)
	}
	tasks := batch * blocks
	if b.split(tasks, 1) && batch*n*keys*(d+dv) >= attnParallelMACs {
		b.parallelFor(tasks, 1, run)
	} else {
		run(0, tasks)
	}
	return nil
}
