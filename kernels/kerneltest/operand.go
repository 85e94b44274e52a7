package kerneltest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// operand is one tensor of a case: its logical values and where a step
// finds them.
type operand struct {
	dtype kernels.DType
	val   ND           // logical values, representable in dtype (outputs: initial values when init)
	init  bool         // an output whose prior contents the step reads (read-modify-write)
	view  kernels.View // Slot and Offset are set when buffers are laid out
	span  int          // elements from Offset that the view reaches (its buffer's minimum)
	wrap  bool         // handed over with Backend.Wrap, as a weight is
	what  string       // layout, for the report
}

// layout says which strides an operand may have: what the graph compiler
// hands a kernel for that operand.
type layout uint8

const (
	dense   layout = iota // row-major, at an offset
	window                // a box inside a larger row-major array (a concat or state window)
	gemm                  // one of the two trailing axes has a unit stride; batch axes anything
	strided               // any: permuted axes, steps, broadcast (stride 0) axes
)

// newOperand lays out vals (of dtype) with a random layout of kind l. For
// strided and gemm layouts, axes listed in bcast must hold values constant
// along them (callers generate them so) and get stride 0.
func newOperand(rng *rand.Rand, dt kernels.DType, vals ND, l layout, bcast []int) *operand {
	shape := vals.Shape
	r := len(shape)
	o := &operand{dtype: dt, val: vals}
	phys := slices.Clone(shape) // extent of the array the view lives in
	step := make([]int, r)
	start := make([]int, r)
	order := make([]int, r) // physical order, outermost first
	for i := range order {
		order[i] = i
		step[i] = 1
	}
	var tags []string
	switch l {
	case window:
		for d := range phys {
			if rng.IntN(2) == 0 {
				extra := 1 + rng.IntN(3)
				phys[d] += extra
				start[d] = rng.IntN(extra + 1)
			}
		}
		tags = append(tags, "window")
	case strided, gemm:
		lo := 0 // axes [lo, r) keep their place and step 1 (the GEMM's unit axis)
		if l == gemm {
			lo = max(r-2, 0)
			if r >= 2 && rng.IntN(2) == 0 {
				order[r-2], order[r-1] = order[r-1], order[r-2]
				tags = append(tags, "T")
			}
			if r >= 2 && rng.IntN(2) == 0 { // a leading dimension larger than the matrix
				phys[order[r-1]] += 1 + rng.IntN(3)
				tags = append(tags, "ld")
			}
		} else {
			lo = r
		}
		if lo > 1 && rng.IntN(3) > 0 {
			rng.Shuffle(lo, func(i, j int) { order[i], order[j] = order[j], order[i] })
			if !slices.IsSorted(order[:lo]) {
				tags = append(tags, "perm")
			}
		}
		for d := 0; d < lo; d++ {
			if rng.IntN(3) == 0 && shape[d] > 1 {
				step[d] = 2 + rng.IntN(2)
				phys[d] = (shape[d]-1)*step[d] + 1 + rng.IntN(2)
				start[d] = rng.IntN(phys[d] - (shape[d]-1)*step[d])
				tags = append(tags, "step")
			}
		}
		if len(bcast) > 0 {
			tags = append(tags, "bcast")
		}
	}
	// Row-major strides of the physical array in its own axis order.
	pst := make([]int, r)
	acc := 1
	for k := r - 1; k >= 0; k-- {
		d := order[k]
		pst[d] = acc
		acc *= max(phys[d], 1)
	}
	strides := make([]int, r)
	off := 0
	for d := range strides {
		strides[d] = pst[d] * step[d]
		off += start[d] * pst[d]
		if slices.Contains(bcast, d) {
			strides[d] = 0
		}
	}
	if rng.IntN(2) == 0 {
		off += 1 + rng.IntN(5)
		tags = append(tags, "off")
	}
	o.view = kernels.View{Offset: off, DType: dt, Shape: slices.Clone(shape), Strides: strides}
	_, hi := o.view.Span()
	o.span = max(hi, off+1) - off
	if len(tags) == 0 {
		tags = []string{"dense"}
	}
	o.what = joinTags(tags)
	return o
}

func joinTags(tags []string) string {
	s := ""
	for i, t := range tags {
		if i > 0 {
			s += "+"
		}
		s += t
	}
	return s
}

// outOperand lays out an output of dtype and shape (contents unknown).
func outOperand(rng *rand.Rand, dt kernels.DType, shape []int, l layout) *operand {
	return newOperand(rng, dt, NewND(shape...), l, nil)
}

// broadcastAxes picks axes (of extent > 1) that an operand of shape reads
// with stride 0, none of them in the trailing keep axes.
func broadcastAxes(rng *rand.Rand, shape []int, keep int) []int {
	var axes []int
	for d := 0; d < len(shape)-keep; d++ {
		if shape[d] > 1 && rng.IntN(4) == 0 {
			axes = append(axes, d)
		}
	}
	return axes
}

// expand returns a with the listed axes made constant: the values of index
// 0 along each of them repeat (what a stride-0 view reads).
func expand(a ND, axes []int) ND {
	if len(axes) == 0 {
		return a
	}
	out := NewND(a.Shape...)
	st := a.Strides()
	for i := range out.Data {
		idx := Unravel(i, a.Shape)
		p := 0
		for d, x := range idx {
			if !slices.Contains(axes, d) {
				p += x * st[d]
			}
		}
		out.Data[i] = a.Data[p]
	}
	return out
}

// randValues returns values of dtype for shape: floats uniform in
// [lo, hi) and rounded to dtype, with about a quarter of them on a grid
// of quarters (ties for rounding, equal values for comparisons);
// integers uniform in [lo, hi] clamped to dtype's range; bools 0 or 1.
func randValues(rng *rand.Rand, dt kernels.DType, lo, hi float64, shape ...int) ND {
	a := NewND(shape...)
	for i := range a.Data {
		var v float64
		switch {
		case dt == kernels.Bool:
			v = float64(rng.IntN(2))
		case dt.IsInt():
			l, h := intRange(dt)
			l, h = max(l, math.Ceil(lo)), min(h, math.Floor(hi))
			v = l + float64(rng.Int64N(int64(h-l)+1))
		default:
			v = lo + (hi-lo)*rng.Float64()
			if rng.IntN(4) == 0 {
				v = math.Round(v*4) / 4
			}
			v = roundTo(dt, v)
		}
		a.Data[i] = v
	}
	return a
}

// intRange returns the values an integer dtype holds (I64: those a
// float64 holds exactly).
func intRange(dt kernels.DType) (lo, hi float64) {
	switch dt {
	case kernels.U8, kernels.Bool:
		return 0, 255
	case kernels.I8:
		return -128, 127
	case kernels.I32:
		return math.MinInt32, math.MaxInt32
	}
	return -(1 << 53), 1 << 53
}

// roundTo returns x as stored in dtype dt and read back: floats rounded
// (F16 and BF16 through float32, as the kernels' conversions), integers
// truncated toward zero, Bool 1 for any non-zero.
func roundTo(dt kernels.DType, x float64) float64 {
	switch dt {
	case kernels.F32:
		return float64(float32(x))
	case kernels.F16:
		return float64(kernels.F16ToF32(kernels.F32ToF16(float32(x))))
	case kernels.BF16:
		return float64(kernels.BF16ToF32(kernels.F32ToBF16(float32(x))))
	case kernels.Bool:
		if x != 0 {
			return 1
		}
		return 0
	}
	if math.IsNaN(x) {
		return 0
	}
	return math.Trunc(x)
}

// putElem stores x as element i (in elements of dt) of buf.
func putElem(buf []byte, dt kernels.DType, i int, x float64) {
	switch dt {
	case kernels.F32:
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(x)))
	case kernels.F16:
		binary.LittleEndian.PutUint16(buf[2*i:], kernels.F32ToF16(float32(x)))
	case kernels.BF16:
		binary.LittleEndian.PutUint16(buf[2*i:], kernels.F32ToBF16(float32(x)))
	case kernels.I32:
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(int32(x)))
	case kernels.I64:
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(int64(x)))
	case kernels.U8, kernels.Bool:
		buf[i] = uint8(x)
	case kernels.I8:
		buf[i] = uint8(int8(x))
	}
}

// getElem reads element i (in elements of dt) of buf.
func getElem(buf []byte, dt kernels.DType, i int) float64 {
	switch dt {
	case kernels.F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
	case kernels.F16:
		return float64(kernels.F16ToF32(binary.LittleEndian.Uint16(buf[2*i:])))
	case kernels.BF16:
		return float64(kernels.BF16ToF32(binary.LittleEndian.Uint16(buf[2*i:])))
	case kernels.I32:
		return float64(int32(binary.LittleEndian.Uint32(buf[4*i:])))
	case kernels.I64:
		return float64(int64(binary.LittleEndian.Uint64(buf[8*i:])))
	case kernels.U8, kernels.Bool:
		return float64(buf[i])
	case kernels.I8:
		return float64(int8(buf[i]))
	}
	return math.NaN()
}

// elemOffsets returns the buffer element each logical element of v (in
// row-major order) lives at.
func elemOffsets(v kernels.View) []int {
	n := v.Len()
	offs := make([]int, n)
	for i := range offs {
		idx := Unravel(i, v.Shape)
		p := v.Offset
		for d, x := range idx {
			p += x * v.Strides[d]
		}
		offs[i] = p
	}
	return offs
}
