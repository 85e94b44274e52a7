package graph

import (
	"github.com/tensorforge/forge/kernels"
)

// A backend that lacks a normalisation kernel but runs reductions and
// fused expressions gets softmax, layer norm and group norm as those: a
// backend's first day then covers them through its fused-code generator
// instead of a round trip to the host. Backends that do support the fixed
// kernel (the CPU's single pass is faster) keep it.

// lowerable reports whether the compiler can rewrite op into OpReduce and
// OpFused steps.
func lowerable(op kernels.Op) bool {
	return op == kernels.OpSoftmax || op == kernels.OpLayerNorm || op == kernels.OpGroupNorm
}

// supported asks the engine's backend about a step whose buffers are not
// placed yet (views carry Slot −1).
func (c *compiler) supported(op kernels.Op, ins, outs []operand, attr any, expr *kernels.Expr) bool {
	if c.e.support == nil {
		return true
	}
	s := kernels.Step{Op: op, Attr: attr, Expr: expr, F32: c.g.f32}
	for _, o := range ins {
		v := o.v
		v.Slot = -1
		s.In = append(s.In, v)
	}
	for _, o := range outs {
		v := o.v
		v.Slot = -1
		s.Out = append(s.Out, v)
	}
	return c.e.support.Supports(&s)
}

// lower appends the reduce-and-fused form of a normalisation step when the
// backend lacks the kernel but runs the pieces, and reports whether it did.
func (c *compiler) lower(op kernels.Op, ins, outs []operand, attr any) bool {
	if !lowerable(op) || c.supported(op, ins, outs, attr, nil) {
		return false
	}
	var steps []pstep
	switch op {
	case kernels.OpSoftmax:
		steps = c.lowerSoftmax(ins[0], outs[0], attr.(kernels.SoftmaxAttr))
	case kernels.OpLayerNorm:
		steps = c.lowerLayerNorm(ins, outs[0], attr.(kernels.NormAttr))
	case kernels.OpGroupNorm:
		steps = c.lowerGroupNorm(ins, outs[0], attr.(kernels.NormAttr))
	}
	for _, s := range steps {
		if !c.supported(s.op, s.in, s.out, s.attr, s.expr) {
			return false
		}
	}
	for _, s := range steps {
		c.emit(s)
	}
	return true
}

// emit appends a step, keeping every arena value it touches alive until it
// runs.
func (c *compiler) emit(s pstep) {
	for _, o := range append(append([]operand(nil), s.in...), s.out...) {
		if o.kind == inArena && o.idx >= 0 {
			c.temps[o.idx].end = max(c.temps[o.idx].end, len(c.steps))
			c.temps[o.idx].def = min(c.temps[o.idx].def, len(c.steps))
		}
	}
	c.steps = append(c.steps, s)
}

// scratch returns a dense arena operand of the given shape.
func (c *compiler) scratch(dt DType, shape Shape) operand {
	l := c.newTemp(dt, shape)
	return operand{kind: inArena, idx: l.idx, v: kernels.View{DType: dt, Shape: shape, Strides: l.strides}}
}

// reduceStep reduces x over axes into a new temp whose reduced axes have
// extent 1.
func (c *compiler) reduceStep(x operand, kind kernels.ReduceKind, axes []int) (pstep, operand) {
	shape := Shape(x.v.Shape).Clone()
	for _, a := range axes {
		shape[a] = 1
	}
	dt := x.v.DType
	if kind == kernels.ReduceArgMax || kind == kernels.ReduceArgMin {
		dt = I64
	}
	out := c.scratch(dt, shape)
	return pstep{op: kernels.OpReduce, in: []operand{x}, out: []operand{out}, attr: kernels.ReduceAttr{Kind: kind, Axes: axes}, name: "lowered reduce"}, out
}

// spread reads o (extent 1 on some axes, or fewer leading axes) as shape
// by broadcasting.
func spread(o operand, shape Shape) operand {
	o.v.Strides = broadcastStrides(o.v.Shape, o.v.Strides, shape)
	o.v.Shape = shape
	return o
}

// exprOf assembles a fused expression from instructions whose registers are
// numbered in order; the last one is the result.
func exprOf(code ...kernels.Instr) *kernels.Expr {
	for i := range code {
		code[i].Dst = uint16(i)
	}
	return &kernels.Expr{Code: code, NumRegs: len(code), Result: uint16(len(code) - 1)}
}

func load(in uint16) kernels.Instr { return kernels.Instr{Op: kernels.ELoad, A: in} }

func un(op kernels.EOp, a uint16) kernels.Instr { return kernels.Instr{Op: op, A: a} }

func bin(op kernels.EOp, a, b uint16) kernels.Instr { return kernels.Instr{Op: op, A: a, B: b} }

func imm(v float64) kernels.Instr { return kernels.Instr{Op: kernels.EConst, Imm: v} }

func fused(ins []operand, out operand, e *kernels.Expr, name string) pstep {
	return pstep{op: kernels.OpFused, in: ins, out: []operand{out}, expr: e, name: name}
}

// lowerSoftmax: m = max(x), e = exp(x − m), s = Σe; y = e/s, or for the
// log form y = x − m − log s.
func (c *compiler) lowerSoftmax(x, out operand, a kernels.SoftmaxAttr) []pstep {
	shape := Shape(x.v.Shape)
	rmax, m := c.reduceStep(x, kernels.ReduceMax, []int{a.Axis})
	e := c.scratch(F32, shape)
	exp := fused([]operand{x, spread(m, shape)}, e, exprOf(load(0), load(1), bin(kernels.ESub, 0, 1), un(kernels.EExp, 2)), "lowered softmax exp")
	rsum, s := c.reduceStep(e, kernels.ReduceSum, []int{a.Axis})
	var final pstep
	if a.Log {
		final = fused([]operand{x, spread(m, shape), spread(s, shape)}, out,
			exprOf(load(0), load(1), load(2), bin(kernels.ESub, 0, 1), un(kernels.ELog, 2), bin(kernels.ESub, 3, 4)), "lowered log_softmax")
	} else {
		final = fused([]operand{e, spread(s, shape)}, out, exprOf(load(0), load(1), bin(kernels.EDiv, 0, 1)), "lowered softmax")
	}
	return []pstep{rmax, exp, rsum, final}
}

// normalise is y = (x − mean)·rsqrt(var + eps) [· w] [+ b] over shape,
// with every operand already spread to it.
func normalise(x, mean, variance operand, w, b *operand, eps float32, out operand, name string) pstep {
	ins := []operand{x, mean, variance}
	code := []kernels.Instr{load(0), load(1), load(2), bin(kernels.ESub, 0, 1), imm(float64(eps)), bin(kernels.EAdd, 2, 4), un(kernels.ERsqrt, 5), bin(kernels.EMul, 3, 6)}
	if w != nil {
		ins = append(ins, *w)
		code = append(code, load(uint16(len(ins)-1)), bin(kernels.EMul, uint16(len(code)-1), uint16(len(code))))
	}
	if b != nil {
		ins = append(ins, *b)
		code = append(code, load(uint16(len(ins)-1)), bin(kernels.EAdd, uint16(len(code)-1), uint16(len(code))))
	}
	return fused(ins, out, exprOf(code...), name)
}

// lowerLayerNorm normalises over the axes from a.Axis on; weight and bias
// (shape of those axes) broadcast over the leading ones.
func (c *compiler) lowerLayerNorm(ins []operand, out operand, a kernels.NormAttr) []pstep {
	x := ins[0]
	shape := Shape(x.v.Shape)
	var axes []int
	for i := a.Axis; i < len(shape); i++ {
		axes = append(axes, i)
	}
	rmean, mean := c.reduceStep(x, kernels.ReduceMean, axes)
	rvar, variance := c.reduceStep(x, kernels.ReduceVar, axes)
	var w, b *operand
	if len(ins) > 1 {
		o := spread(ins[1], shape)
		w = &o
	}
	if len(ins) > 2 {
		o := spread(ins[2], shape)
		b = &o
	}
	return []pstep{rmean, rvar, normalise(x, spread(mean, shape), spread(variance, shape), w, b, a.Eps, out, "lowered layer_norm")}
}

// lowerGroupNorm views dense x [N, C, ...] as [N, G, C/G, L] and
// normalises each group; weight and bias [C] are per channel.
func (c *compiler) lowerGroupNorm(ins []operand, out operand, a kernels.NormAttr) []pstep {
	x := ins[0]
	N, C, G := x.v.Shape[0], x.v.Shape[1], a.Groups
	L := 1
	for _, d := range x.v.Shape[2:] {
		L *= d
	}
	grouped := Shape{N, G, C / G * L}
	xg := x
	xg.v.Shape, xg.v.Strides = grouped, contiguousStrides(grouped)
	rmean, mean := c.reduceStep(xg, kernels.ReduceMean, []int{2})
	rvar, variance := c.reduceStep(xg, kernels.ReduceVar, []int{2})
	full := Shape{N, G, C / G, L}
	view := func(o operand, strides ...int) operand {
		o.v.Shape, o.v.Strides = full, strides
		return o
	}
	xs := view(x, C*L, C/G*L, L, 1)
	ys := view(out, C*L, C/G*L, L, 1)
	stat := func(o operand) operand { return view(o, G, 1, 0, 0) }
	var w, b *operand
	if len(ins) > 1 {
		o := view(ins[1], 0, C/G, 1, 0)
		w = &o
	}
	if len(ins) > 2 {
		o := view(ins[2], 0, C/G, 1, 0)
		b = &o
	}
	return []pstep{rmean, rvar, normalise(xs, stat(mean), stat(variance), w, b, a.Eps, ys, "lowered group_norm")}
}
