package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// tolElem is for float32 fused programs against the exact answer: every
// instruction rounds to float32 and a backend may approximate
// transcendental functions to a few ulp; a dozen chained instructions
// with bounded operands stay well inside it.
var tolElem = tolerance{L2: 1e-5, Abs: 1e-6, Rel: 1e-5}

// tolWide is for float64 (Wide) programs: they only round in float64.
var tolWide = tolerance{L2: 1e-12, Abs: 1e-12, Rel: 1e-12}

// specials are the inputs whose results the EOp definitions pin down:
// NaN, infinities, signed zeros, ties for rounding, tiny and huge values,
// values beyond half precision's range. No denormals: GPUs may flush them
// to zero, and nothing in Forge depends on them.
var specials = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1),
	1, -1, 0.5, -0.5, 1.5, -2.5, 3, -7.25, 1e-30, 70000, -1e30}

// fusedCases: random register programs over random shapes, strides and
// dtypes; every instruction on special values; every dtype conversion.
func fusedCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	ops := allEOps()
	for i := range 5 * len(ops) {
		cs = append(cs, randomFused(rng, ops[i%len(ops)], i))
	}
	for _, op := range ops {
		cs = append(cs, specialFused(rng, op))
	}
	dts := []kernels.DType{kernels.F32, kernels.F16, kernels.BF16, kernels.I32, kernels.I64, kernels.U8, kernels.I8, kernels.Bool}
	for _, from := range dts {
		for _, to := range dts {
			cs = append(cs, convertFused(rng, from, to))
		}
	}
	return cs
}

// fusedShape returns a random output shape: rank 1 to 4, with now and
// then a row longer than a CPU tile (256) or an empty axis.
func fusedShape(rng *rand.Rand, i int) []int {
	shape := make([]int, 1+rng.IntN(4))
	for d := range shape {
		shape[d] = 1 + rng.IntN(6)
	}
	switch {
	case i%17 == 5:
		shape[len(shape)-1] = 257 + rng.IntN(300)
	case i%29 == 11:
		shape[rng.IntN(len(shape))] = 0
	}
	return shape
}

// randomFused writes a random program that uses op at least once.
func randomFused(rng *rand.Rand, op kernels.EOp, i int) *kcase {
	shape := fusedShape(rng, i)
	nIn := 1 + rng.IntN(4)
	mixed := rng.IntN(3) == 0
	g := &exprGen{rng: rng}
	out := kernels.F32
	if rng.IntN(4) == 0 {
		out = []kernels.DType{kernels.F16, kernels.BF16, kernels.I32, kernels.I64, kernels.U8, kernels.I8, kernels.Bool}[rng.IntN(7)]
	}
	// The graph asks for float64 registers when integers may exceed
	// float32's exact range, and for integer results.
	g.wide = out == kernels.I32 || out == kernels.I64 || rng.IntN(8) == 0
	c := &kcase{group: "fused/random", step: kernels.Step{Op: kernels.OpFused}, coalesce: rng.IntN(2) == 0}
	if g.wide {
		c.group = "fused/random wide"
	}
	var dts []string
	for k := range nIn {
		dt := kernels.F32
		if mixed {
			dt = []kernels.DType{kernels.F32, kernels.F16, kernels.BF16, kernels.I32, kernels.I64, kernels.U8, kernels.I8, kernels.Bool}[rng.IntN(8)]
		}
		lo, hi := -4.0, 4.0
		switch {
		case dt == kernels.I64 && g.wide:
			lo, hi = -(1 << 40), 1<<40 // exact only in float64 registers
		case dt == kernels.I32 || dt == kernels.I64:
			lo, hi = -50, 50
		case dt == kernels.U8 || dt == kernels.I8:
			lo, hi = -128, 255
		}
		bc := broadcastAxes(rng, shape, 0)
		vals := expand(randValues(rng, dt, lo, hi, shape...), bc)
		c.in = append(c.in, newOperand(rng, dt, vals, strided, bc))
		bound := 0.0
		for _, v := range vals.Data {
			bound = max(bound, math.Abs(v))
		}
		g.load(k, bound)
		if rng.IntN(5) == 0 { // the same operand loaded twice
			g.load(k, bound)
		}
		dts = append(dts, dt.String())
	}
	ops := allEOps()
	n := 2 + rng.IntN(9)
	at := rng.IntN(n)
	for s := range n {
		o := ops[rng.IntN(len(ops))]
		if s == at {
			o = op
		}
		g.step(o)
		if rng.IntN(6) == 0 {
			g.overwrite()
		}
	}
	res := uint16(len(g.info) - 1)
	if int(res) != int(g.code[len(g.code)-1].Dst) || rng.IntN(8) == 0 {
		res = uint16(rng.IntN(len(g.info)))
	}
	res, info := g.finish(res, out)
	c.step.Expr = &kernels.Expr{Code: g.code, NumRegs: len(g.info), Result: res, Wide: g.wide}
	l := dense
	if rng.IntN(2) == 0 {
		l = window
	}
	c.out = []*operand{outOperand(rng, out, shape, l)}
	c.tol = []tolerance{exprTol(info.exact, g.wide)}
	c.name = fmt.Sprintf("%s; inputs %v", op, dts)
	c.ref = func(in []ND) []ND { return []ND{EvalExpr(c.step.Expr, shape, in...)} }
	c.scale = func() [][]float64 {
		ins := make([]ND, len(c.in))
		for k, o := range c.in {
			ins[k] = o.val
		}
		_, mag := evalExpr(c.step.Expr, shape, ins)
		return [][]float64{mag.Data}
	}
	return c
}

func exprTol(exact, wide bool) tolerance {
	switch {
	case exact:
		return exactly
	case wide:
		return tolWide
	}
	return tolElem
}

// specialFused applies op to the special values: one operand as a column,
// another as a row (broadcast by stride 0), so every pair meets.
func specialFused(rng *rand.Rand, op kernels.EOp) *kcase {
	n := len(specials)
	col := ND{Shape: []int{n, 1}, Data: slices.Clone(specials)}
	row := ND{Shape: []int{1, n}, Data: slices.Clone(specials)}
	shape := []int{n, n}
	c := &kcase{group: "fused/special values", name: op.String(), step: kernels.Step{Op: kernels.OpFused}}
	a := newOperand(rng, kernels.F32, expand(bcastTo(col, shape), []int{1}), strided, []int{1})
	b := newOperand(rng, kernels.F32, expand(bcastTo(row, shape), []int{0}), strided, []int{0})
	code := []kernels.Instr{{Op: kernels.ELoad, Dst: 0, A: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}}
	c.in = []*operand{a, b}
	switch op.Arity() {
	case 1: // through a computed register that the op overwrites: −(−x), then op in place
		code = append(code, kernels.Instr{Op: kernels.ENeg, Dst: 2, A: 0}, kernels.Instr{Op: kernels.ENeg, Dst: 2, A: 2},
			kernels.Instr{Op: op, Dst: 2, A: 2, Imm: 0.25})
	case 2:
		code = append(code, kernels.Instr{Op: op, Dst: 2, A: 0, B: 1})
	case 3: // where(cond, a, b): the column decides between the row and 2
		code = append(code, kernels.Instr{Op: kernels.EConst, Dst: 2, Imm: 2}, kernels.Instr{Op: op, Dst: 2, A: 0, B: 1, C: 2})
	}
	c.step.Expr = &kernels.Expr{Code: code, NumRegs: 3, Result: 2}
	c.out = []*operand{outOperand(rng, kernels.F32, shape, dense)}
	tol := exactly
	if !discontinuous(op) && !exactEOp(op) {
		tol = tolElem
	}
	c.tol = []tolerance{tol}
	c.ref = func(in []ND) []ND { return []ND{EvalExpr(c.step.Expr, shape, in...)} }
	return c
}

// exactEOp reports continuous instructions that every IEEE backend
// computes exactly (correctly rounded, or no rounding at all).
func exactEOp(op kernels.EOp) bool {
	switch op {
	case kernels.ENeg, kernels.EAbs, kernels.ERelu, kernels.ELeakyRelu, kernels.EMax, kernels.EMin,
		kernels.EAdd, kernels.ESub, kernels.EMul, kernels.EDiv, kernels.ERoundF16, kernels.ERoundBF16:
		return true
	}
	return false
}

// bcastTo repeats a's extent-1 axes to shape.
func bcastTo(a ND, shape []int) ND {
	return Map(func(x ...float64) float64 { return x[0] }, a, NewND(shape...))
}

// convertFused loads from one dtype and stores to another, through a
// truncation for float → integer as the graph's casts do.
func convertFused(rng *rand.Rand, from, to kernels.DType) *kcase {
	shape := fusedShape(rng, 1)
	lo, hi := -100.0, 100.0
	if from == kernels.I64 && (to == kernels.I64 || to == kernels.I32) {
		lo, hi = -(1 << 50), 1<<50 // exact only in float64 registers
	}
	for _, dt := range []kernels.DType{from, to} {
		if dt.IsInt() {
			l, h := intRange(dt)
			lo, hi = max(lo, l), min(hi, h)
		}
	}
	vals := randValues(rng, from, lo, hi, shape...)
	c := &kcase{group: "fused/convert", name: from.String() + "→" + to.String(), step: kernels.Step{Op: kernels.OpFused}}
	c.in = []*operand{newOperand(rng, from, vals, strided, nil)}
	code := []kernels.Instr{{Op: kernels.ELoad}}
	if from.IsFloat() && to.IsInt() {
		code = append(code, kernels.Instr{Op: kernels.ETrunc})
	}
	wide := (to == kernels.I32 || to == kernels.I64) || ((from == kernels.I32 || from == kernels.I64) && !to.IsFloat())
	c.step.Expr = &kernels.Expr{Code: code, NumRegs: 1, Wide: wide}
	c.out = []*operand{outOperand(rng, to, shape, window)}
	c.tol = []tolerance{exactly}
	c.ref = func(in []ND) []ND { return []ND{EvalExpr(c.step.Expr, shape, in...)} }
	return c
}
