package graph

import "fmt"

// Reshape returns t with a new shape of the same length; one extent may be
// −1 and is inferred. Reshaping a dense tensor is free; a strided one (a
// transpose, a stepped slice) is copied when the program runs.
func (t Tensor) Reshape(shape ...int) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("reshape", t); !ok {
		return bad
	}
	n := t.node()
	out := make(Shape, len(shape))
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			return g.failf("reshape", "cannot reshape %v to %v: extent %d is invalid (only one −1 is allowed)", n.shape, Shape(shape), d)
		default:
			known *= d
			out[i] = d
		}
	}
	total := n.shape.Len()
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return g.failf("reshape", "cannot reshape %v (%d elements) to %v", n.shape, total, Shape(shape))
		}
		out[infer] = total / known
	} else if known != total {
		return g.failf("reshape", "cannot reshape %v (%d elements) to %v (%d elements)", n.shape, total, out, known)
	}
	if out.Equal(n.shape) {
		return t
	}
	return g.add(node{op: opReshape, in: []uint32{t.id}, shape: out, dtype: n.dtype})
}

// Flatten merges axes [from, to] (inclusive, negative counts from the end).
func (t Tensor) Flatten(from, to int) Tensor {
	s := t.Shape()
	if t.g == nil {
		return Tensor{}
	}
	f, err1 := normAxis(from, len(s))
	e, err2 := normAxis(to, len(s))
	if err1 != nil || err2 != nil || f > e {
		return t.g.failf("flatten", "invalid axis range [%d, %d] for shape %v", from, to, s)
	}
	out := append(Shape{}, s[:f]...)
	out = append(out, s[f:e+1].Len())
	out = append(out, s[e+1:]...)
	return t.Reshape(out...)
}

// Unsqueeze inserts an axis of extent 1 at position axis (which may equal
// the rank, or be negative counting from rank+1).
func (t Tensor) Unsqueeze(axis int) Tensor {
	s := t.Shape()
	if t.g == nil {
		return Tensor{}
	}
	a, err := normAxis(axis, len(s)+1)
	if err != nil {
		return t.g.failf("unsqueeze", "%v (shape %v)", err, s)
	}
	out := append(Shape{}, s[:a]...)
	out = append(out, 1)
	out = append(out, s[a:]...)
	return t.Reshape(out...)
}

// Squeeze removes the given axes, which must have extent 1; with no axes it
// removes every axis of extent 1.
func (t Tensor) Squeeze(axes ...int) Tensor {
	s := t.Shape()
	if t.g == nil {
		return Tensor{}
	}
	drop := make([]bool, len(s))
	if len(axes) == 0 {
		for i, d := range s {
			drop[i] = d == 1
		}
	}
	for _, ax := range axes {
		a, err := normAxis(ax, len(s))
		if err != nil {
			return t.g.failf("squeeze", "%v (shape %v)", err, s)
		}
		if s[a] != 1 {
			return t.g.failf("squeeze", "axis %d of shape %v has extent %d, not 1", ax, s, s[a])
		}
		drop[a] = true
	}
	out := Shape{}
	for i, d := range s {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return t.Reshape(out...)
}

// Permute reorders the axes: output axis i is input axis perm[i]. No data
// moves until a kernel needs a dense operand.
func (t Tensor) Permute(perm ...int) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("permute", t); !ok {
		return bad
	}
	n := t.node()
	if len(perm) != len(n.shape) {
		return g.failf("permute", "permutation %v has %d entries for shape %v of rank %d", perm, len(perm), n.shape, len(n.shape))
	}
	seen := make([]bool, len(perm))
	out := make(Shape, len(perm))
	identity := true
	for i, p := range perm {
		if p < 0 {
			p += len(perm)
		}
		if p < 0 || p >= len(perm) || seen[p] {
			return g.failf("permute", "%v is not a permutation of the %d axes of %v", perm, len(perm), n.shape)
		}
		seen[p] = true
		out[i] = n.shape[p]
		identity = identity && p == i
	}
	if identity {
		return t
	}
	ints := make([]int, len(perm))
	for i, p := range perm {
		if p < 0 {
			p += len(perm)
		}
		ints[i] = p
	}
	return g.add(node{op: opPermute, in: []uint32{t.id}, ints: ints, shape: out, dtype: n.dtype})
}

// Transpose swaps two axes.
func (t Tensor) Transpose(a, b int) Tensor {
	r := t.Rank()
	if t.g == nil {
		return Tensor{}
	}
	x, err1 := normAxis(a, r)
	y, err2 := normAxis(b, r)
	if err1 != nil || err2 != nil {
		return t.g.failf("transpose", "axes %d and %d are out of range for shape %v", a, b, t.Shape())
	}
	perm := make([]int, r)
	for i := range perm {
		perm[i] = i
	}
	perm[x], perm[y] = perm[y], perm[x]
	return t.Permute(perm...)
}

// T swaps the last two axes.
func (t Tensor) T() Tensor { return t.Transpose(-2, -1) }

// Slice keeps elements [start, end) of an axis (Python-style: negative
// indices count from the end, out-of-range bounds are clamped).
func (t Tensor) Slice(axis, start, end int) Tensor { return t.SliceStep(axis, start, end, 1) }

// SliceStep keeps every step-th element of [start, end) along an axis;
// step must be positive.
func (t Tensor) SliceStep(axis, start, end, step int) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("slice", t); !ok {
		return bad
	}
	n := t.node()
	a, err := normAxis(axis, len(n.shape))
	if err != nil {
		return g.failf("slice", "%v (shape %v)", err, n.shape)
	}
	if step <= 0 {
		return g.failf("slice", "step %d must be positive", step)
	}
	dim := n.shape[a]
	clamp := func(i int) int {
		if i < 0 {
			i += dim
		}
		return max(0, min(i, dim))
	}
	s, e := clamp(start), clamp(end)
	length := 0
	if e > s {
		length = (e - s + step - 1) / step
	}
	if s == 0 && length == dim && step == 1 {
		return t
	}
	out := n.shape.Clone()
	out[a] = length
	return g.add(node{op: opSlice, in: []uint32{t.id}, ints: []int{a, s, step}, shape: out, dtype: n.dtype})
}

// Narrow is Slice(axis, start, start+length) with bounds checked strictly.
func (t Tensor) Narrow(axis, start, length int) Tensor {
	s := t.Shape()
	if t.g == nil {
		return Tensor{}
	}
	a, err := normAxis(axis, len(s))
	if err != nil {
		return t.g.failf("narrow", "%v (shape %v)", err, s)
	}
	if start < 0 || length < 0 || start+length > s[a] {
		return t.g.failf("narrow", "window [%d, %d) is outside axis %d of shape %v", start, start+length, axis, s)
	}
	return t.Slice(a, start, start+length)
}

// Expand broadcasts t to shape (NumPy rules; new axes on the left). It
// costs no memory: broadcast axes read with stride 0.
func (t Tensor) Expand(shape Shape) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("expand", t); !ok {
		return bad
	}
	n := t.node()
	b, err := Broadcast(n.shape, shape)
	if err != nil || !b.Equal(shape) {
		return g.failf("expand", "cannot expand %v to %v", n.shape, shape)
	}
	if shape.Equal(n.shape) {
		return t
	}
	return g.add(node{op: opExpand, in: []uint32{t.id}, shape: shape.Clone(), dtype: n.dtype})
}

// Concat joins tensors along an axis; all other extents and the dtype must
// agree.
func Concat(axis int, ts ...Tensor) Tensor {
	if len(ts) == 0 {
		return Tensor{}
	}
	g := ts[0].g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("concat", ts...); !ok {
		return bad
	}
	first := ts[0].node()
	a, err := normAxis(axis, len(first.shape))
	if err != nil {
		return g.failf("concat", "%v (shape %v)", err, first.shape)
	}
	if len(ts) == 1 {
		return ts[0]
	}
	out := first.shape.Clone()
	out[a] = 0
	ids := make([]uint32, len(ts))
	for i, t := range ts {
		n := t.node()
		if n.dtype != first.dtype {
			return g.failf("concat", "input %d has dtype %s, input 0 has %s", i, n.dtype, first.dtype)
		}
		if len(n.shape) != len(first.shape) {
			return g.failf("concat", "input %d has shape %v, input 0 has %v: ranks differ", i, n.shape, first.shape)
		}
		for j := range n.shape {
			if j != a && n.shape[j] != first.shape[j] {
				return g.failf("concat", "input %d has shape %v, input 0 has %v: axis %d differs", i, n.shape, first.shape, j)
			}
		}
		out[a] += n.shape[a]
		ids[i] = t.id
	}
	return g.add(node{op: opConcat, in: ids, ints: []int{a}, shape: out, dtype: first.dtype})
}

// Split cuts t along an axis into pieces of the given sizes, which must sum
// to the axis extent.
func (t Tensor) Split(axis int, sizes ...int) []Tensor {
	s := t.Shape()
	out := make([]Tensor, len(sizes))
	if t.g == nil {
		return out
	}
	a, err := normAxis(axis, len(s))
	total := 0
	for _, z := range sizes {
		total += z
	}
	if err != nil || total != s[a] {
		e := t.g.failf("split", "sizes %v do not split axis %d of shape %v", sizes, axis, s)
		for i := range out {
			out[i] = e
		}
		return out
	}
	off := 0
	for i, z := range sizes {
		out[i] = t.Slice(a, off, off+z)
		off += z
	}
	return out
}

// Chunk splits an axis into n equal pieces.
func (t Tensor) Chunk(axis, n int) []Tensor {
	s := t.Shape()
	a, err := normAxis(axis, len(s))
	if t.g == nil || err != nil || n <= 0 || s[a]%n != 0 {
		e := t.g.failf("chunk", "cannot cut axis %d of shape %v into %d equal pieces", axis, s, n)
		out := make([]Tensor, max(n, 0))
		for i := range out {
			out[i] = e
		}
		return out
	}
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = s[a] / n
	}
	return t.Split(a, sizes...)
}

// String-friendly description used in errors for op argument lists.
func shapesOf(ts ...Tensor) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s%v", t.DType(), t.Shape())
	}
	return s
}
