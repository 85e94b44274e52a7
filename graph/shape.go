package graph

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tensorforge/forge/kernels"
)

// DType is the element type of a tensor.
type DType = kernels.DType

// Element types, re-exported from kernels so model code needs one import.
const (
	F32  = kernels.F32
	F16  = kernels.F16
	BF16 = kernels.BF16
	I32  = kernels.I32
	I64  = kernels.I64
	U8   = kernels.U8
	I8   = kernels.I8
	Bool = kernels.Bool
)

// Shape is the extent of each axis, outermost first. A scalar has an empty
// shape.
type Shape []int

// Len returns the number of elements (1 for a scalar).
func (s Shape) Len() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Rank returns the number of axes.
func (s Shape) Rank() int { return len(s) }

// Equal reports whether two shapes are identical.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that does not alias s.
func (s Shape) Clone() Shape { return append(Shape(nil), s...) }

// String renders the shape as [2 3 4].
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// contiguousStrides returns row-major strides for s.
func contiguousStrides(s Shape) []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// Broadcast returns the NumPy broadcast of the given shapes, or an error
// that names the shapes and the axis where they disagree.
func Broadcast(shapes ...Shape) (Shape, error) {
	rank := 0
	for _, s := range shapes {
		if len(s) > rank {
			rank = len(s)
		}
	}
	out := make(Shape, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			if d < 0 {
				return nil, fmt.Errorf("negative extent in shape %v", s)
			}
			o := out[off+i]
			switch {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %v are not broadcast-compatible: axis %d (from the right) has extents %d and %d, and neither is 1",
					shapes, rank-off-i, o, d)
			}
		}
	}
	return out, nil
}

// normAxis maps a possibly negative axis to [0, rank).
func normAxis(axis, rank int) (int, error) {
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}
