package graph

import (
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// kernelNode appends a single-output kernel node.
func (g *Graph) kernelNode(op kernels.Op, attr any, ins []Tensor, shape Shape, dt DType) Tensor {
	ids := make([]uint32, len(ins))
	for i, t := range ins {
		ids[i] = t.id
	}
	return g.add(node{op: opKernel, kop: op, attr: attr, in: ids, shape: shape, dtype: dt, nout: 1})
}

// multiNode appends a kernel node with several outputs and returns one
// tuple tensor per output.
func (g *Graph) multiNode(op kernels.Op, attr any, ins []Tensor, shapes []Shape, dts []DType) []Tensor {
	ids := make([]uint32, len(ins))
	for i, t := range ins {
		ids[i] = t.id
	}
	// The kernel node itself carries the first output's shape; the others
	// are recorded in ints as a flattened (rank, dims...) list so the node
	// stays self-describing for hashing.
	var ints []int
	for i, s := range shapes {
		ints = append(ints, int(dts[i]), len(s))
		ints = append(ints, s...)
	}
	k := g.add(node{op: opKernel, kop: op, attr: attr, in: ids, shape: shapes[0], dtype: dts[0], nout: len(shapes), ints: ints})
	out := make([]Tensor, len(shapes))
	for i := range shapes {
		out[i] = g.add(node{op: opTuple, in: []uint32{k.id}, ints: []int{i}, shape: shapes[i], dtype: dts[i]})
	}
	return out
}

// outSpecs decodes the output shapes of a multi-output kernel node.
func (n *node) outSpecs() ([]Shape, []DType) {
	if n.nout <= 1 {
		return []Shape{n.shape}, []DType{n.dtype}
	}
	var shapes []Shape
	var dts []DType
	for i := 0; i < len(n.ints); {
		dt, r := DType(n.ints[i]), n.ints[i+1]
		shapes = append(shapes, Shape(n.ints[i+2:i+2+r]))
		dts = append(dts, dt)
		i += 2 + r
	}
	return shapes, dts
}

// reduceAxes normalises, sorts and de-duplicates axes; none means all.
func reduceAxes(axes []int, rank int) ([]int, error) {
	if len(axes) == 0 {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := make([]int, 0, len(axes))
	for _, a := range axes {
		n, err := normAxis(a, rank)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (t Tensor) reduce(name string, kind kernels.ReduceKind, keep bool, correction int, axes []int) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check(name, t); !ok {
		return bad
	}
	n := t.node()
	if !n.dtype.IsFloat() && kind != kernels.ReduceArgMax && kind != kernels.ReduceArgMin && kind != kernels.ReduceMax && kind != kernels.ReduceMin && kind != kernels.ReduceSum {
		return g.failf(name, "needs a floating-point input, got %s%v", n.dtype, n.shape)
	}
	if n.dtype == Bool {
		return g.failf(name, "is not defined for bool input %v", n.shape)
	}
	ax, err := reduceAxes(axes, len(n.shape))
	if err != nil {
		return g.failf(name, "%v (shape %v)", err, n.shape)
	}
	kshape := n.shape.Clone()
	for _, a := range ax {
		if n.shape[a] == 0 && kind != kernels.ReduceSum && kind != kernels.ReduceProd {
			return g.failf(name, "axis %d of shape %v is empty", a, n.shape)
		}
		kshape[a] = 1
	}
	dt := n.dtype
	if kind == kernels.ReduceArgMax || kind == kernels.ReduceArgMin {
		dt = I64
	}
	r := g.kernelNode(kernels.OpReduce, kernels.ReduceAttr{Kind: kind, Axes: ax, Correction: correction}, []Tensor{t}, kshape, dt)
	if keep {
		return r
	}
	return r.Squeeze(ax...)
}

// Sum adds over the given axes (all when none); keep retains them with
// extent 1.
func (t Tensor) Sum(keep bool, axes ...int) Tensor {
	return t.reduce("sum", kernels.ReduceSum, keep, 0, axes)
}

// Mean averages over the given axes (all when none).
func (t Tensor) Mean(keep bool, axes ...int) Tensor {
	return t.reduce("mean", kernels.ReduceMean, keep, 0, axes)
}

// Max takes the maximum over the given axes (all when none).
func (t Tensor) Max(keep bool, axes ...int) Tensor {
	return t.reduce("max", kernels.ReduceMax, keep, 0, axes)
}

// Min takes the minimum over the given axes (all when none).
func (t Tensor) Min(keep bool, axes ...int) Tensor {
	return t.reduce("min", kernels.ReduceMin, keep, 0, axes)
}

// Prod multiplies over the given axes (all when none).
func (t Tensor) Prod(keep bool, axes ...int) Tensor {
	return t.reduce("prod", kernels.ReduceProd, keep, 0, axes)
}

// ArgMax returns the (first) index of the maximum along axis, as I64.
func (t Tensor) ArgMax(axis int, keep bool) Tensor {
	return t.reduce("argmax", kernels.ReduceArgMax, keep, 0, []int{axis})
}

// ArgMin returns the (first) index of the minimum along axis, as I64.
func (t Tensor) ArgMin(axis int, keep bool) Tensor {
	return t.reduce("argmin", kernels.ReduceArgMin, keep, 0, []int{axis})
}

// Var returns the variance over the given axes with the denominator
// count − correction (torch.var's correction: 1 unbiased, 0 population).
func (t Tensor) Var(keep bool, correction int, axes ...int) Tensor {
	return t.reduce("var", kernels.ReduceVar, keep, correction, axes)
}

func (t Tensor) softmax(name string, axis int, log bool) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check(name, t); !ok {
		return bad
	}
	n := t.node()
	if n.dtype != F32 {
		return g.failf(name, "needs f32 input, got %s%v", n.dtype, n.shape)
	}
	a, err := normAxis(axis, len(n.shape))
	if err != nil {
		return g.failf(name, "%v (shape %v)", err, n.shape)
	}
	return g.kernelNode(kernels.OpSoftmax, kernels.SoftmaxAttr{Axis: a, Log: log}, []Tensor{t}, n.shape, F32)
}

// Softmax normalises exp(t) along axis.
func (t Tensor) Softmax(axis int) Tensor { return t.softmax("softmax", axis, false) }

// LogSoftmax returns log(softmax(t)) along axis, computed stably.
func (t Tensor) LogSoftmax(axis int) Tensor { return t.softmax("log_softmax", axis, true) }

// LayerNorm normalises over the trailing axes covered by weight's shape (or
// the last axis when weight is the zero Tensor), then applies weight and
// bias when given.
func (t Tensor) LayerNorm(weight, bias Tensor, eps float64) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	ins := []Tensor{t}
	normRank := 1
	if weight.g != nil {
		ins = append(ins, weight)
		normRank = weight.Rank()
		if bias.g != nil {
			ins = append(ins, bias)
		}
	} else if bias.g != nil {
		return g.failf("layer_norm", "bias given without weight")
	}
	if bad, ok := g.check("layer_norm", ins...); !ok {
		return bad
	}
	n := t.node()
	if n.dtype != F32 {
		return g.failf("layer_norm", "needs f32 input, got %s%v", n.dtype, n.shape)
	}
	if normRank > len(n.shape) || normRank == 0 {
		return g.failf("layer_norm", "weight %v cannot normalise input %v", weight.Shape(), n.shape)
	}
	tail := n.shape[len(n.shape)-normRank:]
	for _, p := range ins[1:] {
		if !p.Shape().Equal(tail) || p.DType() != F32 {
			return g.failf("layer_norm", "weight/bias %s must be f32%v to normalise input %v", shapesOf(p), tail, n.shape)
		}
	}
	return g.kernelNode(kernels.OpLayerNorm, kernels.NormAttr{Axis: len(n.shape) - normRank, Eps: float32(eps)}, ins, n.shape, F32)
}

// GroupNorm normalises x [N, C, ...] over groups of C/groups channels (and
// all trailing axes), then applies per-channel weight and bias when given.
func (t Tensor) GroupNorm(groups int, weight, bias Tensor, eps float64) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	ins := []Tensor{t}
	if weight.g != nil {
		ins = append(ins, weight)
		if bias.g != nil {
			ins = append(ins, bias)
		}
	} else if bias.g != nil {
		return g.failf("group_norm", "bias given without weight")
	}
	if bad, ok := g.check("group_norm", ins...); !ok {
		return bad
	}
	n := t.node()
	if n.dtype != F32 || len(n.shape) < 2 {
		return g.failf("group_norm", "needs f32 input [N, C, ...], got %s%v", n.dtype, n.shape)
	}
	c := n.shape[1]
	if groups <= 0 || c%groups != 0 {
		return g.failf("group_norm", "%d channels of %v do not divide into %d groups", c, n.shape, groups)
	}
	for _, p := range ins[1:] {
		if !p.Shape().Equal(Shape{c}) || p.DType() != F32 {
			return g.failf("group_norm", "weight/bias %s must be f32[%d] for input %v", shapesOf(p), c, n.shape)
		}
	}
	return g.kernelNode(kernels.OpGroupNorm, kernels.NormAttr{Groups: groups, Eps: float32(eps)}, ins, n.shape, F32)
}

// InstanceNorm normalises each channel of x [N, C, L] over L
// (torch.nn.InstanceNorm1d), with optional affine weight and bias.
func (t Tensor) InstanceNorm(weight, bias Tensor, eps float64) Tensor {
	return t.GroupNorm(t.Dim(1), weight, bias, eps)
}

// MatMulOpts are the options of MatMulWith and LinearWith.
type MatMulOpts struct {
	// BF16 lets the product round its operands to bfloat16 (products
	// summed in float32) where the backend has a faster path for that,
	// such as the CPU's AMX tiles or AVX512_BF16 with a constant weight;
	// elsewhere it changes nothing. It is for products whose users
	// measured that the rounding is harmless.
	BF16 bool
}

// attr is the kernel attribute of a product with these options: nil for
// the zero options, so that plain products hash as they always did.
func (o MatMulOpts) attr() any {
	if o == (MatMulOpts{}) {
		return nil
	}
	return kernels.MatMulAttr{BF16: o.BF16}
}

// MatMul is torch.matmul for operands of rank ≥ 1: 1-D operands are
// promoted and the added axis removed, leading (batch) axes broadcast.
// Transposed operands (t.T()) are read in place, not copied.
func (t Tensor) MatMul(o Tensor) Tensor { return t.MatMulWith(o, MatMulOpts{}) }

// MatMulWith is MatMul with options.
func (t Tensor) MatMulWith(o Tensor, opts MatMulOpts) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("matmul", t, o); !ok {
		return bad
	}
	a, b := t, o
	an, bn := a.node(), b.node()
	if an.dtype != F32 || bn.dtype != F32 {
		return g.failf("matmul", "needs f32 operands, got %s", shapesOf(t, o))
	}
	if len(an.shape) == 0 || len(bn.shape) == 0 {
		return g.failf("matmul", "operands must have rank ≥ 1, got %s", shapesOf(t, o))
	}
	squeezeA, squeezeB := false, false
	if len(an.shape) == 1 {
		a, squeezeA = a.Unsqueeze(0), true
	}
	if len(bn.shape) == 1 {
		b, squeezeB = b.Unsqueeze(1), true
	}
	as, bs := a.Shape(), b.Shape()
	m, k := as[len(as)-2], as[len(as)-1]
	k2, nn := bs[len(bs)-2], bs[len(bs)-1]
	if k != k2 {
		return g.failf("matmul", "inner extents differ: %s (contracting %d with %d)", shapesOf(t, o), k, k2)
	}
	batch, err := Broadcast(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		return g.failf("matmul", "batch axes of %s: %v", shapesOf(t, o), err)
	}
	out := append(batch.Clone(), m, nn)
	r := g.kernelNode(kernels.OpMatMul, opts.attr(), []Tensor{a, b}, out, F32)
	if squeezeB {
		r = r.Squeeze(-1)
	}
	if squeezeA {
		r = r.Squeeze(-2)
	}
	return r
}

// Linear returns t·wᵀ + b for w [out, in] (PyTorch layout) and optional b
// [out] (pass the zero Tensor for none).
func (t Tensor) Linear(w, b Tensor) Tensor { return t.LinearWith(w, b, MatMulOpts{}) }

// LinearWith is Linear with the product's options.
func (t Tensor) LinearWith(w, b Tensor, opts MatMulOpts) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("linear", t, w); !ok {
		return bad
	}
	if w.Rank() != 2 || t.Rank() == 0 || t.Dim(-1) != w.Dim(1) {
		return g.failf("linear", "input %v does not fit weight %v ([out, in])", t.Shape(), w.Shape())
	}
	s := t.Shape()
	x := t
	if len(s) > 2 {
		x = t.Reshape(-1, s[len(s)-1])
	}
	y := x.MatMulWith(w.T(), opts)
	if b.g != nil {
		if !b.Shape().Equal(Shape{w.Dim(0)}) {
			return g.failf("linear", "bias %v does not fit weight %v", b.Shape(), w.Shape())
		}
		y = y.Add(b)
	}
	if len(s) > 2 {
		out := append(s[:len(s)-1].Clone(), w.Dim(0))
		y = y.Reshape(out...)
	}
	return y
}

// ConvOpts are the options of the 1-D convolutions. Zero values mean
// stride 1, no padding, dilation 1, one group.
type ConvOpts struct {
	Stride        int
	Padding       int // both sides, unless PadLeft/PadRight are set
	PadLeft       int
	PadRight      int
	Dilation      int
	Groups        int
	OutputPadding int // ConvTranspose1d only
	// BF16 lets a Conv1d or ConvTranspose1d round its operands to
	// bfloat16 (products summed in float32) where the backend has a faster
	// path for that, such as the CPU's AMX tiles; elsewhere it changes
	// nothing. It is for layers whose users measured that the rounding is
	// harmless.
	BF16 bool
	// Winograd lets a stride-1 Conv1d run by Winograd's minimal
	// filtering in float32 where the backend has that path (the CPU's, for
	// 3 to 11 taps, on AVX-512): 2–3 times fewer products, at a relative error of up
	// to ~2e-4 against the exact sum where the direct product's is ~1e-6
	// (kernels/cpu/gemm, winograd.go). Like BF16, it is for layers whose
	// users measured that the error is harmless; where the backend also
	// runs bfloat16 for the layer, bfloat16 wins.
	Winograd bool
}

func (o ConvOpts) attr() kernels.ConvAttr {
	a := kernels.ConvAttr{Stride: max(o.Stride, 1), Dilation: max(o.Dilation, 1), Groups: max(o.Groups, 1), OutputPadding: o.OutputPadding,
		PadLeft: o.Padding, PadRight: o.Padding, BF16: o.BF16, Winograd: o.Winograd}
	if o.PadLeft != 0 || o.PadRight != 0 {
		a.PadLeft, a.PadRight = o.PadLeft, o.PadRight
	}
	return a
}

func convIns(t, w, b Tensor) []Tensor {
	if b.g != nil {
		return []Tensor{t, w, b}
	}
	return []Tensor{t, w}
}

// Conv1d convolves x [N, Cin, L] (or [Cin, L]) with w [Cout, Cin/groups,
// K] and adds b [Cout] when given, as torch.nn.functional.conv1d.
func (t Tensor) Conv1d(w, b Tensor, o ConvOpts) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	ins := convIns(t, w, b)
	if bad, ok := g.check("conv1d", ins...); !ok {
		return bad
	}
	if t.Rank() == 2 {
		return t.Unsqueeze(0).Conv1d(w, b, o).Squeeze(0)
	}
	a := o.attr()
	xs, ws := t.Shape(), w.Shape()
	if t.DType() != F32 || w.DType() != F32 || len(xs) != 3 || len(ws) != 3 {
		return g.failf("conv1d", "needs f32 x [N, Cin, L] and w [Cout, Cin/groups, K], got %s", shapesOf(ins...))
	}
	if a.PadLeft < 0 || a.PadRight < 0 || a.OutputPadding != 0 {
		return g.failf("conv1d", "invalid padding %+v", o)
	}
	cin, cout, k := xs[1], ws[0], ws[2]
	if cin%a.Groups != 0 || cout%a.Groups != 0 || ws[1] != cin/a.Groups {
		return g.failf("conv1d", "weight %v does not fit input %v with %d groups", ws, xs, a.Groups)
	}
	if b.g != nil && (!b.Shape().Equal(Shape{cout}) || b.DType() != F32) {
		return g.failf("conv1d", "bias %v must be f32[%d]", b.Shape(), cout)
	}
	span := a.Dilation*(k-1) + 1
	lp := xs[2] + a.PadLeft + a.PadRight
	if lp < span {
		return g.failf("conv1d", "input length %d (padded %d) is shorter than the kernel span %d", xs[2], lp, span)
	}
	lout := (lp-span)/a.Stride + 1
	return g.kernelNode(kernels.OpConv1d, a, ins, Shape{xs[0], cout, lout}, F32)
}

// ConvTranspose1d is torch.nn.functional.conv_transpose1d: x [N, Cin, L],
// w [Cin, Cout/groups, K], optional b [Cout].
func (t Tensor) ConvTranspose1d(w, b Tensor, o ConvOpts) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	ins := convIns(t, w, b)
	if bad, ok := g.check("conv_transpose1d", ins...); !ok {
		return bad
	}
	if t.Rank() == 2 {
		return t.Unsqueeze(0).ConvTranspose1d(w, b, o).Squeeze(0)
	}
	a := o.attr()
	xs, ws := t.Shape(), w.Shape()
	if t.DType() != F32 || w.DType() != F32 || len(xs) != 3 || len(ws) != 3 {
		return g.failf("conv_transpose1d", "needs f32 x [N, Cin, L] and w [Cin, Cout/groups, K], got %s", shapesOf(ins...))
	}
	cin, k := xs[1], ws[2]
	cout := ws[1] * a.Groups
	if ws[0] != cin || cin%a.Groups != 0 {
		return g.failf("conv_transpose1d", "weight %v does not fit input %v with %d groups", ws, xs, a.Groups)
	}
	if a.PadLeft != a.PadRight || a.PadLeft < 0 || a.OutputPadding < 0 || a.OutputPadding >= max(a.Stride, a.Dilation) {
		return g.failf("conv_transpose1d", "invalid padding %+v (output padding must be smaller than stride or dilation)", o)
	}
	if b.g != nil && (!b.Shape().Equal(Shape{cout}) || b.DType() != F32) {
		return g.failf("conv_transpose1d", "bias %v must be f32[%d]", b.Shape(), cout)
	}
	lout := (xs[2]-1)*a.Stride - 2*a.PadLeft + a.Dilation*(k-1) + a.OutputPadding + 1
	if lout <= 0 {
		return g.failf("conv_transpose1d", "output length %d is not positive for input %v and weight %v", lout, xs, ws)
	}
	return g.kernelNode(kernels.OpConvTranspose1d, a, ins, Shape{xs[0], cout, lout}, F32)
}

// LSTMWeights are one direction's parameters in PyTorch layout and gate
// order (i, f, g, o): WIH [4H, I], WHH [4H, H], BIH and BHH [4H].
type LSTMWeights struct {
	WIH, WHH, BIH, BHH Tensor
}

// LSTM runs a (bi)directional single-layer LSTM as one op. x is [T, B, I]
// ([B, T, I] when batchFirst); h0 and c0 are [D, B, H] or zero Tensors for
// zeros. It returns y [T, B, D·H] (or [B, T, D·H]), hN and cN [D, B, H].
func (t Tensor) LSTM(fw LSTMWeights, bw *LSTMWeights, h0, c0 Tensor, batchFirst bool) (y, hN, cN Tensor) {
	g := t.g
	if g == nil {
		return
	}
	dirs := []LSTMWeights{fw}
	if bw != nil {
		dirs = append(dirs, *bw)
	}
	ins := []Tensor{t}
	for _, d := range dirs {
		ins = append(ins, d.WIH, d.WHH, d.BIH, d.BHH)
	}
	fail := func(format string, args ...any) (Tensor, Tensor, Tensor) {
		e := g.failf("lstm", format, args...)
		return e, e, e
	}
	if bad, ok := g.check("lstm", ins...); !ok {
		return bad, bad, bad
	}
	xs := t.Shape()
	if len(xs) != 3 || t.DType() != F32 {
		return fail("x must be f32 of rank 3, got %s%v", t.DType(), xs)
	}
	steps, batch := xs[0], xs[1]
	if batchFirst {
		steps, batch = xs[1], xs[0]
	}
	in := xs[2]
	h := fw.WHH.Dim(1)
	for i, d := range dirs {
		if !d.WIH.Shape().Equal(Shape{4 * h, in}) || !d.WHH.Shape().Equal(Shape{4 * h, h}) ||
			!d.BIH.Shape().Equal(Shape{4 * h}) || !d.BHH.Shape().Equal(Shape{4 * h}) {
			return fail("direction %d weights %s do not fit input size %d and hidden size %d", i, shapesOf(d.WIH, d.WHH, d.BIH, d.BHH), in, h)
		}
	}
	D := len(dirs)
	state := Shape{D, batch, h}
	for _, s := range []Tensor{h0, c0} {
		if s.g == nil {
			s = g.Full(0, F32, state)
		}
		if bad, ok := g.check("lstm", s); !ok {
			return bad, bad, bad
		}
		if !s.Shape().Equal(state) || s.DType() != F32 {
			return fail("initial state %s must be f32%v", shapesOf(s), state)
		}
		ins = append(ins, s)
	}
	yshape := Shape{steps, batch, D * h}
	if batchFirst {
		yshape = Shape{batch, steps, D * h}
	}
	outs := g.multiNode(kernels.OpLSTM, kernels.LSTMAttr{Hidden: h, Bidirectional: D == 2, BatchFirst: batchFirst}, ins,
		[]Shape{yshape, state, state}, []DType{F32, F32, F32})
	return outs[0], outs[1], outs[2]
}

// Gather picks slices of t along axis by integer indices (numpy.take):
// the output shape is t.shape[:axis] + idx.shape + t.shape[axis+1:].
// Embedding lookup is w.Gather(0, ids).
func (t Tensor) Gather(axis int, idx Tensor) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("gather", t, idx); !ok {
		return bad
	}
	n := t.node()
	a, err := normAxis(axis, len(n.shape))
	if err != nil {
		return g.failf("gather", "%v (shape %v)", err, n.shape)
	}
	if d := idx.DType(); d != I32 && d != I64 {
		return g.failf("gather", "indices must be i32 or i64, got %s%v", d, idx.Shape())
	}
	out := append(n.shape[:a].Clone(), idx.Shape()...)
	out = append(out, n.shape[a+1:]...)
	return g.kernelNode(kernels.OpGather, kernels.AxisAttr{Axis: a}, []Tensor{t, idx}, out, n.dtype)
}

// IndexSelect is torch.index_select: idx is 1-D.
func (t Tensor) IndexSelect(axis int, idx Tensor) Tensor {
	if idx.g != nil && idx.Rank() != 1 {
		return t.g.failf("index_select", "indices must be 1-D, got %v", idx.Shape())
	}
	return t.Gather(axis, idx)
}

// RepeatInterleave repeats each slice along axis counts[i] times. counts
// (1-D, I32/I64, one per slice) is data, so the output length must be
// given: total = sum(counts). The kernel checks it and fails the run
// otherwise.
func (t Tensor) RepeatInterleave(counts Tensor, axis, total int) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("repeat_interleave", t, counts); !ok {
		return bad
	}
	n := t.node()
	a, err := normAxis(axis, len(n.shape))
	if err != nil {
		return g.failf("repeat_interleave", "%v (shape %v)", err, n.shape)
	}
	if d := counts.DType(); (d != I32 && d != I64) || !counts.Shape().Equal(Shape{n.shape[a]}) {
		return g.failf("repeat_interleave", "counts must be i32/i64[%d] for axis %d of %v, got %s", n.shape[a], a, n.shape, shapesOf(counts))
	}
	if total < 0 {
		return g.failf("repeat_interleave", "negative total %d", total)
	}
	out := n.shape.Clone()
	out[a] = total
	return g.kernelNode(kernels.OpRepeatInterleave, kernels.AxisAttr{Axis: a}, []Tensor{t, counts}, out, n.dtype)
}

// Pad adds before[i] and after[i] elements on each axis i (lists as long as
// the rank). Reflect excludes the edge element, as torch; its pad must be
// smaller than the axis extent.
func (t Tensor) Pad(mode kernels.PadMode, value float64, before, after []int) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("pad", t); !ok {
		return bad
	}
	n := t.node()
	if len(before) != len(n.shape) || len(after) != len(n.shape) {
		return g.failf("pad", "padding lists %v/%v must have one entry per axis of %v", before, after, n.shape)
	}
	out := n.shape.Clone()
	changed := false
	for i := range out {
		b, a := before[i], after[i]
		if b < 0 || a < 0 {
			return g.failf("pad", "negative padding %v/%v", before, after)
		}
		if mode == kernels.PadReflect && (b >= n.shape[i] || a >= n.shape[i]) && (b > 0 || a > 0) {
			return g.failf("pad", "reflect padding %d/%d on axis %d needs the extent %d to be larger", b, a, i, n.shape[i])
		}
		if mode == kernels.PadReplicate && n.shape[i] == 0 && (b > 0 || a > 0) {
			return g.failf("pad", "replicate padding of empty axis %d of %v", i, n.shape)
		}
		out[i] += b + a
		changed = changed || b > 0 || a > 0
	}
	if !changed {
		return t
	}
	return g.kernelNode(kernels.OpPad, kernels.PadAttr{Mode: mode, Before: slices.Clone(before), After: slices.Clone(after), Value: value}, []Tensor{t}, out, n.dtype)
}

// Pad1d pads the last axis with left and right elements.
func (t Tensor) Pad1d(mode kernels.PadMode, left, right int) Tensor {
	r := t.Rank()
	before, after := make([]int, r), make([]int, r)
	if r > 0 {
		before[r-1], after[r-1] = left, right
	}
	return t.Pad(mode, 0, before, after)
}

// Cumsum returns running sums along axis (exclusive: shifted by one so the
// first is 0; reverse: from the end).
func (t Tensor) Cumsum(axis int, exclusive, reverse bool) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("cumsum", t); !ok {
		return bad
	}
	n := t.node()
	a, err := normAxis(axis, len(n.shape))
	if err != nil {
		return g.failf("cumsum", "%v (shape %v)", err, n.shape)
	}
	if n.dtype != F32 && n.dtype != I32 && n.dtype != I64 {
		return g.failf("cumsum", "needs f32, i32 or i64 input, got %s%v", n.dtype, n.shape)
	}
	return g.kernelNode(kernels.OpCumsum, kernels.CumsumAttr{Axis: a, Exclusive: exclusive, Reverse: reverse}, []Tensor{t}, n.shape, n.dtype)
}

// DynamicQuantize quantizes f32 t to U8 with one scale and zero point for
// the whole tensor, exactly as ONNX DynamicQuantizeLinear.
func (t Tensor) DynamicQuantize() (q, scale, zeroPoint Tensor) {
	g := t.g
	if g == nil {
		return
	}
	if bad, ok := g.check("dynamic_quantize", t); !ok {
		return bad, bad, bad
	}
	if t.DType() != F32 {
		e := g.failf("dynamic_quantize", "needs f32 input, got %s%v", t.DType(), t.Shape())
		return e, e, e
	}
	outs := g.multiNode(kernels.OpDynamicQuantize, nil, []Tensor{t}, []Shape{t.Shape(), {}, {}}, []DType{U8, F32, U8})
	return outs[0], outs[1], outs[2]
}

// MatMulInteger is ONNX MatMulInteger for 2-D operands: (a − aZero)·(b −
// bZero) in I32, with a U8 [M, K], b U8/I8 [K, N] (b.T() of a PyTorch
// [N, K] weight is read in place), aZero a scalar of a's dtype and bZero a
// scalar or [N] of b's dtype.
func (t Tensor) MatMulInteger(b, aZero, bZero Tensor) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	ins := []Tensor{t, b, aZero, bZero}
	if bad, ok := g.check("matmul_integer", ins...); !ok {
		return bad
	}
	as, bs := t.Shape(), b.Shape()
	if t.DType() != U8 || (b.DType() != U8 && b.DType() != I8) || len(as) != 2 || len(bs) != 2 || as[1] != bs[0] {
		return g.failf("matmul_integer", "needs a u8[M, K] and b u8/i8[K, N], got %s", shapesOf(t, b))
	}
	if aZero.DType() != U8 || aZero.Shape().Len() != 1 {
		return g.failf("matmul_integer", "a's zero point must be one u8, got %s", shapesOf(aZero))
	}
	if bZero.DType() != b.DType() || (bZero.Shape().Len() != 1 && !bZero.Shape().Equal(Shape{bs[1]})) {
		return g.failf("matmul_integer", "b's zero point must be one %s or %s[%d], got %s", b.DType(), b.DType(), bs[1], shapesOf(bZero))
	}
	return g.kernelNode(kernels.OpMatMulInteger, nil, ins, Shape{as[0], bs[1]}, I32)
}

// ConvInteger1d is ONNX ConvInteger for 1-D inputs: x U8 [N, Cin, L], w
// U8/I8 [Cout, Cin/groups, K], scalar zero points; the result is I32.
func (t Tensor) ConvInteger1d(w, xZero, wZero Tensor, o ConvOpts) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	ins := []Tensor{t, w, xZero, wZero}
	if bad, ok := g.check("conv_integer1d", ins...); !ok {
		return bad
	}
	a := o.attr()
	xs, ws := t.Shape(), w.Shape()
	if t.DType() != U8 || (w.DType() != U8 && w.DType() != I8) || len(xs) != 3 || len(ws) != 3 {
		return g.failf("conv_integer1d", "needs x u8[N, Cin, L] and w u8/i8[Cout, Cin/groups, K], got %s", shapesOf(t, w))
	}
	if a.Groups != 1 || ws[1] != xs[1] {
		return g.failf("conv_integer1d", "weight %v does not fit input %v (only groups=1 is supported)", ws, xs)
	}
	if xZero.DType() != U8 || xZero.Shape().Len() != 1 || wZero.DType() != w.DType() || wZero.Shape().Len() != 1 {
		return g.failf("conv_integer1d", "zero points must be single values of the operand dtypes, got %s", shapesOf(xZero, wZero))
	}
	span := a.Dilation*(ws[2]-1) + 1
	lp := xs[2] + a.PadLeft + a.PadRight
	if lp < span {
		return g.failf("conv_integer1d", "input length %d (padded %d) is shorter than the kernel span %d", xs[2], lp, span)
	}
	return g.kernelNode(kernels.OpConvInteger1d, a, ins, Shape{xs[0], ws[0], (lp-span)/a.Stride + 1}, I32)
}

// LinearQOpts are the options of LinearQWith.
type LinearQOpts struct {
	// Int16 lets the product round each row of t to 16-bit fixed point
	// (one scale per row, its largest magnitude at 32,639 steps) and sum
	// the products with the weight's bytes exactly in integers, where the
	// backend has 8-bit dot-product units (the CPU's AVX512_VNNI); elsewhere
	// it changes nothing. A row's rounding is at most its largest magnitude
	// / 65,278 per element, less in total than rounding every element to
	// bfloat16 unless the row is dominated by a few outliers. It is for
	// products whose users measured that the rounding is harmless.
	Int16 bool
}

// attr is the kernel attribute of a product with these options: nil for
// the zero options, so that plain products hash as they always did.
func (o LinearQOpts) attr() any {
	if o == (LinearQOpts{}) {
		return nil
	}
	return kernels.LinearQAttr{Int16: o.Int16}
}

// LinearQ returns t·((w − zeroPoint)·scale)ᵀ for a weight quantized to
// bytes, w U8/I8 [out, in] (PyTorch layout) with one scale (F32) and one
// zero point (w's dtype), and float32 t [..., in]: weight-only quantization.
// The weight is dequantized on the fly, never stored as float32, so a
// product with few rows of t (a decoder step) streams a quarter of the bytes
// of Linear on the dequantized weight. For many rows it depends on the
// backend: the CPU dequantizes the weight's panels as it packs them for a
// blocked product, as fast as Linear on a float32 copy, while a backend
// whose kernel is made for a few rows (CUDA's) is faster with Linear on
// the dequantized weight.
func (t Tensor) LinearQ(w, scale, zeroPoint Tensor) Tensor {
	return t.LinearQWith(w, scale, zeroPoint, LinearQOpts{})
}

// LinearQWith is LinearQ with options.
func (t Tensor) LinearQWith(w, scale, zeroPoint Tensor, opts LinearQOpts) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("linear_q", t, w, scale, zeroPoint); !ok {
		return bad
	}
	ws := w.Shape()
	if t.DType() != F32 || (w.DType() != U8 && w.DType() != I8) || len(ws) != 2 || t.Rank() == 0 || t.Dim(-1) != ws[1] {
		return g.failf("linear_q", "needs f32 input [..., in] and u8/i8 weight [out, in], got %s", shapesOf(t, w))
	}
	if scale.DType() != F32 || scale.Shape().Len() != 1 || zeroPoint.DType() != w.DType() || zeroPoint.Shape().Len() != 1 {
		return g.failf("linear_q", "needs one f32 scale and one %s zero point, got %s", w.DType(), shapesOf(scale, zeroPoint))
	}
	s := t.Shape()
	x := t.Reshape(-1, s[len(s)-1])
	y := g.kernelNode(kernels.OpLinearQ, opts.attr(), []Tensor{x, w, scale, zeroPoint}, Shape{x.Dim(0), ws[0]}, F32)
	out := append(s[:len(s)-1].Clone(), ws[0])
	return y.Reshape(out...)
}

// Attention returns softmax(q·kᵀ + mask)·v over the two trailing axes, for
// q [..., n, d], k [..., s, d] and v [..., s, dv] (leading axes broadcast
// as in MatMul; strided views such as heads split off a [s, heads·d]
// projection are read in place) and an optional additive mask (the zero
// Tensor for none): [n, s] for every batch item, or [..., n, s] whose
// leading axes broadcast to the batch's, so that each item of a batch of
// sequences masks its own length. Scale q beforehand. It is one kernel: each block
// of queries keeps its scores in cache between the two products, and the
// [n, s] score matrix is never stored.
func (q Tensor) Attention(k, v, mask Tensor) Tensor {
	g := q.g
	if g == nil {
		return Tensor{}
	}
	ins := []Tensor{q, k, v}
	if mask.g != nil {
		ins = append(ins, mask)
	}
	if bad, ok := g.check("attention", ins...); !ok {
		return bad
	}
	for _, t := range ins {
		if t.DType() != F32 || t.Rank() < 2 {
			return g.failf("attention", "needs f32 operands of rank ≥ 2, got %s", shapesOf(ins...))
		}
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	n, d := qs[len(qs)-2], qs[len(qs)-1]
	s := ks[len(ks)-2]
	if ks[len(ks)-1] != d || vs[len(vs)-2] != s {
		return g.failf("attention", "q [.., n, d], k [.., s, d] and v [.., s, dv] do not fit: %s", shapesOf(q, k, v))
	}
	ms := mask.Shape()
	if mask.g != nil && !ms[len(ms)-2:].Equal(Shape{n, s}) {
		return g.failf("attention", "mask must be [..., %d, %d], got %v", n, s, ms)
	}
	batch, err := Broadcast(qs[:len(qs)-2], ks[:len(ks)-2], vs[:len(vs)-2])
	if err != nil {
		return g.failf("attention", "batch axes of %s: %v", shapesOf(q, k, v), err)
	}
	if mask.g != nil {
		if mb, err := Broadcast(batch, ms[:len(ms)-2]); err != nil || !mb.Equal(batch) {
			return g.failf("attention", "mask %v does not broadcast to the batch axes %v of %s", ms, batch, shapesOf(q, k, v))
		}
	}
	return g.kernelNode(kernels.OpAttention, nil, ins, append(batch.Clone(), n, vs[len(vs)-1]), F32)
}
