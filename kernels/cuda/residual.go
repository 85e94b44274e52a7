package cuda

import (
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// Products that add their sum into a tensor as they store it.
//
// A transformer's residual stream takes every projection back through an
// elementwise sum: x + (h·W + b). On the GPU that sum was a launch of its
// own after the product, reading the product's output and x and writing
// the new stream: in Whisper tiny's encoder eight of them a 30-s window,
// 4.4 µs each on an H100 for 2.3 MB. cuBLASLt computes D = A·B + β·C (+ the
// bias epilogue) in one pass, so when the step right after a product only
// sums the product's output with one other tensor of its shape (and
// perhaps a bias over its columns), and nothing else reads the product's
// output, the product reads that tensor as C (β = 1) and writes the sum's
// output as D, and the sum's launch goes. The additions' order is
// cuBLASLt's rather than the expression's, so results may differ from the
// unfused run's in the last bit of a float32. A sum placed over the
// product's own output stays a launch: the liveness test sees that output
// as read after the sum.

// residualAdd is the sum merged into a product: the step it replaces and
// its operands other than the product's output.
type residualAdd struct {
	add  int          // the elementwise step
	c    kernels.View // the tensor added, read as C
	bias *kernels.View
	out  kernels.View // the sum's output, written as D
}

// residualAdds finds, for each product, the sum after it that it can
// compute (keyed by the product's step); skip says a step is launched as
// part of another already.
func (b *Backend) residualAdds(steps []kernels.Step, readAfter func(kernels.View) bool, skip func(int) bool) map[int]*residualAdd {
	if b.blas == nil {
		return nil
	}
	var adds map[int]*residualAdd
	for i := 0; i+1 < len(steps); i++ {
		s, j := &steps[i], i+1
		if s.Op != kernels.OpMatMul || skip(i) || skip(j) || !b.blas.supports(s) || steps[j].Op != kernels.OpFused {
			continue
		}
		if r := residualOf(steps, i, j, readAfter); r != nil {
			if adds == nil {
				adds = map[int]*residualAdd{}
			}
			adds[i] = r
		}
	}
	return adds
}

// residualOf returns the sum step j computes from product i's output, if
// it is one the product can take in.
func residualOf(steps []kernels.Step, i, j int, readAfter func(kernels.View) bool) *residualAdd {
	s, ep := &steps[i], &steps[j]
	out := s.Out[0]
	p := planBatch(s.In[0], s.In[1], out)
	if len(p.outer) > 0 || !dense(out) || out.DType != kernels.F32 || len(ep.Out) != 1 || !sums(ep.Expr, len(ep.In)) {
		return nil
	}
	y := ep.Out[0]
	if y.DType != kernels.F32 || !dense(y) || !slices.Equal(y.Shape, out.Shape) {
		return nil
	}
	from, ok := epilogueOperand(steps, i, j, readAfter)
	if !ok {
		return nil
	}
	for _, v := range s.In {
		if overlaps(v, y) {
			return nil // the product would write what its tiles still read
		}
	}
	r := &residualAdd{add: j, out: y}
	found := false
	for k, v := range ep.In {
		switch {
		case 1+k == from:
		case !found && v.DType == kernels.F32 && dense(v) && slices.Equal(v.Shape, out.Shape):
			r.c, found = v, true
		case r.bias == nil && len(s.In) == 2 && columnVector(v, out):
			r.bias = &ep.In[k]
		default:
			return nil
		}
	}
	if !found {
		return nil
	}
	return r
}

// sums reports whether e is a sum of its n operands, each loaded once:
// following which operands each register holds, every addition joins two
// disjoint sets, and the result holds them all.
func sums(e *kernels.Expr, n int) bool {
	if e == nil || n < 2 || n > 64 {
		return false
	}
	holds := make([]uint64, e.NumRegs) // a bit per operand
	var loaded uint64
	for _, in := range e.Code {
		switch in.Op {
		case kernels.ELoad:
			bit := uint64(1) << in.A
			if int(in.A) >= n || loaded&bit != 0 {
				return false
			}
			loaded |= bit
			holds[in.Dst] = bit
		case kernels.EAdd:
			a, b := holds[in.A], holds[in.B]
			if a == 0 || b == 0 || a&b != 0 {
				return false
			}
			holds[in.Dst] = a | b
		default:
			return false
		}
	}
	return holds[e.Result] == uint64(1)<<n-1
}

// columnVector reports whether v is a float32 vector over out's columns,
// the same for every row (a bias).
func columnVector(v, out kernels.View) bool {
	r := len(out.Shape)
	if v.DType != kernels.F32 || len(v.Shape) != r || v.Shape[r-1] != out.Shape[r-1] || v.Strides[r-1] != 1 {
		return false
	}
	for k := 0; k < r-1; k++ {
		if v.Shape[k] != 1 && v.Strides[k] != 0 {
			return false
		}
	}
	return true
}
