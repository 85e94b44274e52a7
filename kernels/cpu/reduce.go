package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// reduce implements OpReduce over any strided input. Sums accumulate in
// float64 so long reductions do not drift.
func (b *Backend) reduce(s *kernels.Step, bufs []kernels.Buffer) error {
	in, out := s.In[0], s.Out[0]
	attr, ok := s.Attr.(kernels.ReduceAttr)
	if !ok {
		return fmt.Errorf("cpu: reduce: missing attributes")
	}
	count := 1
	for d, n := range in.Shape {
		if slices.Contains(attr.Axes, d) {
			count *= n
		}
	}
	nOut := out.Len()
	if nOut == 0 {
		return nil
	}
	if count == 0 && attr.Kind != kernels.ReduceSum && attr.Kind != kernels.ReduceProd {
		return fmt.Errorf("cpu: reduce %d over an empty axis", attr.Kind)
	}
	r := reduceRun{in: in, out: out, attr: attr, bufs: bufs, count: count}
	grain := max(1, 32768/max(count, 1))
	if !b.split(nOut, grain) {
		r.run(0, nOut)
		return nil
	}
	shared := r // only the parallel path moves the run to the heap
	b.parallelFor(nOut, grain, func(lo, hi int) { shared.run(lo, hi) })
	return nil
}

// reduceRun is one launch of a reduction.
type reduceRun struct {
	in, out kernels.View
	attr    kernels.ReduceAttr
	bufs    []kernels.Buffer
	count   int // elements reduced into each output
}

// run computes outputs [lo, hi).
func (red reduceRun) run(lo, hi int) {
	in, out, attr, bufs, count := red.in, red.out, red.attr, red.bufs, red.count
	// Split the axes into kept and reduced ones (arrays on the stack: the
	// per-chunk reductions of a streaming model must not allocate).
	var dims [4][8]int
	keptShape, keptStr, redShape, redStr := dims[0][:0], dims[1][:0], dims[2][:0], dims[3][:0]
	for d := range in.Shape {
		if slices.Contains(attr.Axes, d) {
			redShape = append(redShape, in.Shape[d])
			redStr = append(redStr, in.Strides[d])
		} else {
			keptShape = append(keptShape, in.Shape[d])
			keptStr = append(keptStr, in.Strides[d])
		}
	}
	// innermost reduced axis drives the fast loop
	rIn, rSt := 1, 0
	if len(redShape) > 0 {
		rIn, rSt = redShape[len(redShape)-1], redStr[len(redStr)-1]
	}
	outer := count / max(rIn, 1)
	// A float32 input is read through one slice, made once: making it per
	// element was most of the time of an int8 Whisper encoder's
	// reductions.
	var f []float32
	if in.DType == kernels.F32 {
		f = f32s(bufs, in)
	}
	load := func(i int) float64 {
		if f != nil {
			return float64(f[i])
		}
		return loadElem(bufs, in, i)
	}
	for o := lo; o < hi; o++ {
		base := in.Offset
		r := o
		for d := len(keptShape) - 1; d >= 0; d-- {
			base += (r % keptShape[d]) * keptStr[d]
			r /= keptShape[d]
		}
		var acc, acc2 float64
		best, bestIdx := math.NaN(), int64(0)
		switch attr.Kind {
		case kernels.ReduceProd:
			acc = 1
		case kernels.ReduceMax, kernels.ReduceArgMax:
			best = math.Inf(-1)
		case kernels.ReduceMin, kernels.ReduceArgMin:
			best = math.Inf(1)
		}
		seenNaN := false
		idx := int64(0)
		for q := 0; q < outer; q++ {
			off := base
			rr := q
			for d := len(redShape) - 2; d >= 0; d-- {
				off += (rr % redShape[d]) * redStr[d]
				rr /= redShape[d]
			}
			for j := 0; j < rIn; j++ {
				x := load(off + j*rSt)
				switch attr.Kind {
				case kernels.ReduceSum, kernels.ReduceMean, kernels.ReduceVar:
					acc += x
					acc2 += x * x
				case kernels.ReduceProd:
					acc *= x
				case kernels.ReduceMax, kernels.ReduceArgMax:
					if x > best || (x != x && !seenNaN) {
						best, bestIdx = x, idx
						seenNaN = x != x
					}
				case kernels.ReduceMin, kernels.ReduceArgMin:
					if x < best || (x != x && !seenNaN) {
						best, bestIdx = x, idx
						seenNaN = x != x
					}
				}
				idx++
			}
		}
		var v float64
		switch attr.Kind {
		case kernels.ReduceSum, kernels.ReduceProd:
			v = acc
		case kernels.ReduceMean:
			v = acc / float64(count)
		case kernels.ReduceVar:
			// Second pass around the mean for accuracy.
			mean := acc / float64(count)
			var ss float64
			for q := 0; q < outer; q++ {
				off := base
				rr := q
				for d := len(redShape) - 2; d >= 0; d-- {
					off += (rr % redShape[d]) * redStr[d]
					rr /= redShape[d]
				}
				for j := 0; j < rIn; j++ {
					dx := load(off+j*rSt) - mean
					ss += dx * dx
				}
			}
			v = ss / float64(count-attr.Correction)
		case kernels.ReduceMax, kernels.ReduceMin:
			v = best
		case kernels.ReduceArgMax, kernels.ReduceArgMin:
			v = float64(bestIdx)
		}
		storeElem(bufs, out, out.Offset+o, v)
	}
}
