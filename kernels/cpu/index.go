package cpu

import (
	"fmt"

	"github.com/tensorforge/forge/kernels"
)

// indexAt reads an I32 or I64 index.
func indexAt(bufs []kernels.Buffer, v kernels.View, i int) int64 {
	if v.DType == kernels.I32 {
		return int64(i32s(bufs, v)[v.Offset+i])
	}
	return i64s(bufs, v)[v.Offset+i]
}

// gather implements OpGather (numpy.take along an axis) for any dtype by
// copying contiguous runs of bytes. Negative indices count from the end.
func (b *Backend) gather(s *kernels.Step, bufs []kernels.Buffer) error {
	dv, iv, out := s.In[0], s.In[1], s.Out[0]
	a, ok := s.Attr.(kernels.AxisAttr)
	if !ok {
		return fmt.Errorf("cpu: gather: missing attributes")
	}
	outer, dim, inner := splitAxis(dv.Shape, a.Axis)
	es := dv.DType.Size()
	run := inner * es
	nIdx := iv.Len()
	src := bytesOf(bufs, dv)[dv.Offset*es:]
	dst := bytesOf(bufs, out)[out.Offset*es:]
	for j := 0; j < nIdx; j++ {
		ix := indexAt(bufs, iv, j)
		if ix < 0 {
			ix += int64(dim)
		}
		if ix < 0 || ix >= int64(dim) {
			return fmt.Errorf("cpu: gather: index %d is out of range for axis %d of extent %d", indexAt(bufs, iv, j), a.Axis, dim)
		}
	}
	for o := 0; o < outer; o++ {
		for j := 0; j < nIdx; j++ {
			ix := indexAt(bufs, iv, j)
			if ix < 0 {
				ix += int64(dim)
			}
			from := (o*dim + int(ix)) * run
			to := (o*nIdx + j) * run
			copy(dst[to:to+run], src[from:from+run])
		}
	}
	return nil
}

// sliceUpdate implements OpSliceUpdate: src is dense, the destination is a
// dense state written in place.
func (b *Backend) sliceUpdate(s *kernels.Step, bufs []kernels.Buffer) error {
	sv, iv, dv := s.In[0], s.In[1], s.Out[0]
	a, ok := s.Attr.(kernels.AxisAttr)
	if !ok {
		return fmt.Errorf("cpu: slice_update: missing attributes")
	}
	outer, dim, inner := splitAxis(dv.Shape, a.Axis)
	n := sv.Shape[a.Axis]
	starts := iv.Len()
	if starts != 1 && starts != outer {
		return fmt.Errorf("cpu: slice_update: %d starts for %d rows (want 1 or one per row)", starts, outer)
	}
	// Every start is checked before anything is written, so a bad one
	// leaves the state as it was.
	for i := range starts {
		if start := indexAt(bufs, iv, i); start < 0 || start+int64(n) > int64(dim) {
			return fmt.Errorf("cpu: slice_update: %d elements at %d do not fit axis %d of extent %d", n, start, a.Axis, dim)
		}
	}
	es := dv.DType.Size()
	run := n * inner * es
	src := bytesOf(bufs, sv)[sv.Offset*es:]
	dst := bytesOf(bufs, dv)[dv.Offset*es:]
	for o := 0; o < outer; o++ {
		start := indexAt(bufs, iv, min(o, starts-1))
		to := (o*dim + int(start)) * inner * es
		copy(dst[to:to+run], src[o*run:(o+1)*run])
	}
	return nil
}

// repeatInterleave implements OpRepeatInterleave; the counts must be
// non-negative and sum to the output extent the graph was built with.
func (b *Backend) repeatInterleave(s *kernels.Step, bufs []kernels.Buffer) error {
	xv, cv, out := s.In[0], s.In[1], s.Out[0]
	a, ok := s.Attr.(kernels.AxisAttr)
	if !ok {
		return fmt.Errorf("cpu: repeat_interleave: missing attributes")
	}
	outer, dim, inner := splitAxis(xv.Shape, a.Axis)
	total := int64(0)
	for i := 0; i < dim; i++ {
		c := indexAt(bufs, cv, i)
		if c < 0 {
			return fmt.Errorf("cpu: repeat_interleave: count %d at %d is negative", c, i)
		}
		total += c
	}
	if total != int64(out.Shape[a.Axis]) {
		return fmt.Errorf("cpu: repeat_interleave: counts sum to %d, the graph expected %d", total, out.Shape[a.Axis])
	}
	es := xv.DType.Size()
	run := inner * es
	src := bytesOf(bufs, xv)[xv.Offset*es:]
	dst := bytesOf(bufs, out)[out.Offset*es:]
	to := 0
	for o := 0; o < outer; o++ {
		for i := 0; i < dim; i++ {
			from := (o*dim + i) * run
			for r := indexAt(bufs, cv, i); r > 0; r-- {
				copy(dst[to:to+run], src[from:from+run])
				to += run
			}
		}
	}
	return nil
}

// pad implements OpPad for any dtype: each output row along the last axis
// is assembled from its source row (or the fill value).
func (b *Backend) pad(s *kernels.Step, bufs []kernels.Buffer) error {
	xv, out := s.In[0], s.Out[0]
	a, ok := s.Attr.(kernels.PadAttr)
	if !ok {
		return fmt.Errorf("cpu: pad: missing attributes")
	}
	r := len(out.Shape)
	if out.Len() == 0 {
		return nil
	}
	es := xv.DType.Size()
	src := bytesOf(bufs, xv)[xv.Offset*es:]
	dst := bytesOf(bufs, out)[out.Offset*es:]
	fill := make([]byte, es)
	{
		tmp := &buffer{b: fill}
		storeElem([]kernels.Buffer{tmp}, kernels.View{DType: xv.DType}, 0, a.Value)
	}
	inStr := make([]int, r)
	acc := 1
	for d := r - 1; d >= 0; d-- {
		inStr[d] = acc
		acc *= xv.Shape[d]
	}
	// mapIdx maps an output coordinate on axis d to an input one, or −1.
	mapIdx := func(d, i int) int {
		n := xv.Shape[d]
		j := i - a.Before[d]
		if j >= 0 && j < n {
			return j
		}
		switch a.Mode {
		case kernels.PadReflect:
			for j < 0 || j >= n {
				if j < 0 {
					j = -j
				}
				if j >= n {
					j = 2*(n-1) - j
				}
			}
			return j
		case kernels.PadReplicate:
			return max(0, min(j, n-1))
		}
		return -1
	}
	W := out.Shape[r-1]
	rows := out.Len() / W
	for row := 0; row < rows; row++ {
		base := 0
		valid := true
		rem := row
		for d := r - 2; d >= 0; d-- {
			i := rem % out.Shape[d]
			rem /= out.Shape[d]
			j := mapIdx(d, i)
			if j < 0 {
				valid = false
				break
			}
			base += j * inStr[d]
		}
		o := dst[row*W*es : (row+1)*W*es]
		// The source row lands in one piece; only the borders need mapping.
		lo, n := a.Before[r-1], xv.Shape[r-1]
		mid0, mid1 := max(lo, 0), min(lo+n, W)
		if !valid || mid1 <= mid0 {
			mid0, mid1 = 0, 0
		} else {
			copy(o[mid0*es:mid1*es], src[(base+mid0-lo)*es:(base+mid1-lo)*es])
		}
		for t := 0; t < W; t++ {
			if t == mid0 && mid1 > mid0 {
				t = mid1 - 1
				continue
			}
			var j int
			if valid {
				j = mapIdx(r-1, t)
			} else {
				j = -1
			}
			if j < 0 {
				copy(o[t*es:(t+1)*es], fill)
			} else {
				copy(o[t*es:(t+1)*es], src[(base+j)*es:(base+j+1)*es])
			}
		}
	}
	return nil
}

// cumsum implements OpCumsum. Float sums accumulate in float32 in order, as
// onnxruntime's CumSum does, so long phase integrations match it.
func (b *Backend) cumsum(s *kernels.Step, bufs []kernels.Buffer) error {
	xv, out := s.In[0], s.Out[0]
	a, ok := s.Attr.(kernels.CumsumAttr)
	if !ok {
		return fmt.Errorf("cpu: cumsum: missing attributes")
	}
	outer, n, inner := splitAxis(xv.Shape, a.Axis)
	b.parallelFor(outer*inner, 64, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o, i := r/inner, r%inner
			base := o*n*inner + i
			switch xv.DType {
			case kernels.F32:
				x, y := f32s(bufs, xv)[xv.Offset:], f32s(bufs, out)[out.Offset:]
				var acc float32
				for q := 0; q < n; q++ {
					j := q
					if a.Reverse {
						j = n - 1 - q
					}
					idx := base + j*inner
					v := x[idx]
					if a.Exclusive {
						y[idx] = acc
						acc += v
					} else {
						acc += v
						y[idx] = acc
					}
				}
			default:
				var acc int64
				for q := 0; q < n; q++ {
					j := q
					if a.Reverse {
						j = n - 1 - q
					}
					idx := base + j*inner
					v := indexAt(bufs, xv, idx)
					if a.Exclusive {
						storeElem(bufs, out, out.Offset+idx, float64(acc))
						acc += v
					} else {
						acc += v
						storeElem(bufs, out, out.Offset+idx, float64(acc))
					}
				}
			}
		}
	})
	return nil
}
