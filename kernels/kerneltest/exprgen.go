package kerneltest

import (
	"math"
	"math/rand/v2"

	"github.com/tensorforge/forge/kernels"
)

// exprGen writes random register programs that stay well conditioned, so
// that a float32 backend and the float64 reference agree to a stated
// tolerance: operands of log, sqrt, division and pow are made positive
// and bounded away from zero by instructions in the program itself, and
// magnitudes stay below maxBound.
//
// Some instructions are discontinuous (floor, comparisons, mod, ...): a
// last-bit difference in their operand changes the result by a whole unit.
// They only take exact registers: values every IEEE backend computes
// bit for bit (loads, constants, and exact instructions of exact
// registers; never a transcendental function or a product, which a
// backend may approximate or contract into a fused multiply-add). A
// program whose result is exact must match to the bit.
type exprGen struct {
	rng  *rand.Rand
	code []kernels.Instr
	info []regInfo
	wide bool
}

type regInfo struct {
	bound float64 // |value| ≤ bound (NaN-free by construction)
	exact bool
}

const maxBound = 1e4

// discontinuous instructions jump by a unit at some operand value.
func discontinuous(op kernels.EOp) bool {
	switch op {
	case kernels.EFloor, kernels.ECeil, kernels.ERound, kernels.ETrunc, kernels.ESign,
		kernels.EIsNaN, kernels.ENot, kernels.EMod, kernels.EEq, kernels.ENe, kernels.ELt,
		kernels.ELe, kernels.EGt, kernels.EGe, kernels.EAnd, kernels.EOr, kernels.EWhere:
		return true
	}
	return false
}

func (g *exprGen) emit(in kernels.Instr, info regInfo) uint16 {
	in.Dst = uint16(len(g.info))
	g.info = append(g.info, info)
	g.code = append(g.code, in)
	return in.Dst
}

// overwrite moves the last instruction's result into an existing register
// (possibly one of its own operands: backends must read operands before
// writing the destination). Only a step's last instruction is moved, so
// the guards a step builds stay intact.
func (g *exprGen) overwrite() {
	last := len(g.code) - 1
	n := len(g.info) - 1
	if int(g.code[last].Dst) != n || n == 0 {
		return
	}
	r := uint16(g.rng.IntN(n))
	g.code[last].Dst = r
	g.info[r] = g.info[n]
	g.info = g.info[:n]
}

func (g *exprGen) load(k int, bound float64) uint16 {
	return g.emit(kernels.Instr{Op: kernels.ELoad, A: uint16(k)}, regInfo{bound: bound, exact: true})
}

func (g *exprGen) konst(v float64) uint16 {
	if !g.wide {
		v = float64(float32(v))
	}
	return g.emit(kernels.Instr{Op: kernels.EConst, Imm: v}, regInfo{bound: math.Abs(v), exact: true})
}

func (g *exprGen) un(op kernels.EOp, a uint16, info regInfo) uint16 {
	return g.emit(kernels.Instr{Op: op, A: a}, info)
}

func (g *exprGen) bin(op kernels.EOp, a, b uint16, info regInfo) uint16 {
	return g.emit(kernels.Instr{Op: op, A: a, B: b}, info)
}

// pick returns a random register, an exact one when exact is set (a new
// constant when overwrites left none).
func (g *exprGen) pick(exact bool) uint16 {
	var cands []uint16
	for r, ri := range g.info {
		if !exact || ri.exact {
			cands = append(cands, uint16(r))
		}
	}
	if len(cands) == 0 {
		return g.konst(float64(g.rng.IntN(17)-8) / 4)
	}
	return cands[g.rng.IntN(len(cands))]
}

// squash maps a register into [-1, 1] (tanh).
func (g *exprGen) squash(r uint16) uint16 {
	return g.un(kernels.ETanh, r, regInfo{bound: 1})
}

// tame returns r, squashed first when its bound exceeds limit.
func (g *exprGen) tame(r uint16, limit float64) uint16 {
	if g.info[r].bound > limit {
		return g.squash(r)
	}
	return r
}

// positive returns |r| + floor, an exact register when r is.
func (g *exprGen) positive(r uint16, floor float64) uint16 {
	ri := g.info[r]
	a := g.un(kernels.EAbs, r, ri)
	c := g.konst(floor)
	return g.bin(kernels.EAdd, a, c, regInfo{bound: ri.bound + floor, exact: ri.exact})
}

// step appends one instruction of kind op (with the guards it needs).
func (g *exprGen) step(op kernels.EOp) {
	ex := discontinuous(op)
	a := g.pick(ex)
	ai := g.info[a]
	switch op {
	case kernels.ENeg, kernels.EAbs, kernels.ERelu:
		g.un(op, a, ai)
	case kernels.ELeakyRelu:
		slope := []float64{0.25, 0.2, 0.01}[g.rng.IntN(3)]
		g.emit(kernels.Instr{Op: op, A: a, Imm: slope}, regInfo{bound: ai.bound, exact: ai.exact && slope == 0.25})
	case kernels.EFloor, kernels.ECeil, kernels.ERound, kernels.ETrunc:
		g.un(op, a, regInfo{bound: ai.bound + 1, exact: true})
	case kernels.ESign, kernels.EIsNaN, kernels.ENot:
		g.un(op, a, regInfo{bound: 1, exact: true})
	case kernels.EExp:
		a = g.tame(a, 10)
		g.un(op, a, regInfo{bound: math.Exp(g.info[a].bound)})
	case kernels.ELog, kernels.ESqrt, kernels.ERsqrt:
		p := g.positive(a, 0.25)
		b := g.info[p].bound
		bound := map[kernels.EOp]float64{kernels.ELog: math.Max(math.Log(b), 1.4), kernels.ESqrt: math.Sqrt(b), kernels.ERsqrt: 2}[op]
		g.un(op, p, regInfo{bound: bound})
	case kernels.ERecip:
		p := g.positive(a, 0.5)
		if g.rng.IntN(2) == 0 {
			p = g.un(kernels.ENeg, p, g.info[p])
		}
		g.un(op, p, regInfo{bound: 2})
	case kernels.ESin, kernels.ECos:
		a = g.tame(a, 1000)
		g.un(op, a, regInfo{bound: 1})
	case kernels.ETanh, kernels.ESigmoid, kernels.EErf:
		g.un(op, a, regInfo{bound: 1})
	case kernels.EGeluErf, kernels.EGeluTanh, kernels.ESilu:
		g.un(op, a, regInfo{bound: ai.bound + 1})
	case kernels.ERoundF16, kernels.ERoundBF16:
		a = g.tame(a, 60000)
		g.un(op, a, regInfo{bound: g.info[a].bound * 1.01, exact: g.info[a].exact})
	case kernels.EAdd, kernels.ESub, kernels.EMax, kernels.EMin:
		b := g.pick(false)
		bi := g.info[b]
		if ai.bound+bi.bound > maxBound {
			a, b = g.squash(a), g.squash(b)
			ai, bi = g.info[a], g.info[b]
		}
		bound := ai.bound + bi.bound
		if op == kernels.EMax || op == kernels.EMin {
			bound = math.Max(ai.bound, bi.bound)
		}
		g.bin(op, a, b, regInfo{bound: bound, exact: ai.exact && bi.exact})
	case kernels.EMul:
		b := g.pick(false)
		if ai.bound*g.info[b].bound > maxBound {
			a, b = g.squash(a), g.tame(b, 100)
		}
		g.bin(op, a, b, regInfo{bound: g.info[a].bound * g.info[b].bound})
	case kernels.EDiv:
		b := g.positive(g.pick(false), 0.5)
		a = g.tame(a, maxBound/2)
		g.bin(op, a, b, regInfo{bound: 2 * g.info[a].bound})
	case kernels.EPow:
		base := g.positive(g.tame(a, 50), 0.5)
		e := g.squash(g.pick(false))
		two := g.konst(2)
		e = g.bin(kernels.EMul, e, two, regInfo{bound: 2})
		g.bin(op, base, e, regInfo{bound: math.Max(math.Pow(g.info[base].bound, 2), 4)})
	case kernels.EMod:
		b := g.positive(g.pick(true), 0.5)
		if g.rng.IntN(2) == 0 {
			b = g.un(kernels.ENeg, b, g.info[b])
		}
		g.bin(op, a, b, regInfo{bound: g.info[b].bound, exact: true})
	case kernels.EEq, kernels.ENe, kernels.ELt, kernels.ELe, kernels.EGt, kernels.EGe, kernels.EAnd, kernels.EOr:
		g.bin(op, a, g.pick(true), regInfo{bound: 1, exact: true})
	case kernels.EWhere:
		b, c := g.pick(false), g.pick(false)
		bi, ci := g.info[b], g.info[c]
		g.emit(kernels.Instr{Op: op, A: a, B: b, C: c}, regInfo{bound: math.Max(bi.bound, ci.bound), exact: bi.exact && ci.exact})
	}
}

// allEOps lists every instruction but loads and constants.
func allEOps() []kernels.EOp {
	var ops []kernels.EOp
	for op := kernels.EConst + 1; kernels.EOp(op).Arity() > 0 && !isUnknownEOp(op); op++ {
		ops = append(ops, op)
	}
	return ops
}

func isUnknownEOp(op kernels.EOp) bool {
	s := op.String()
	return len(s) > 4 && s[:4] == "eop("
}

// finish converts the result register so that out can hold it: integer
// outputs are truncated and clamped into range, half-precision ones kept
// in range, and Bool outputs come from a comparison of exact registers so
// that no backend's last bit decides them.
func (g *exprGen) finish(r uint16, out kernels.DType) (uint16, regInfo) {
	switch {
	case out == kernels.Bool && !g.info[r].exact:
		c := g.konst(float64(g.rng.IntN(3) - 1))
		r = g.bin(kernels.EGt, g.pick(true), c, regInfo{bound: 1, exact: true})
	case out == kernels.F16:
		r = g.tame(r, 60000)
	case out.IsInt():
		ri := g.info[r]
		r = g.un(kernels.ETrunc, r, regInfo{bound: ri.bound, exact: ri.exact})
		if lo, hi := intRange(out); ri.bound > math.Min(-lo, hi) {
			ex := g.info[r].exact
			lc, hc := g.konst(lo), g.konst(hi)
			r = g.bin(kernels.EMax, r, lc, regInfo{bound: -lo, exact: ex})
			r = g.bin(kernels.EMin, r, hc, regInfo{bound: math.Max(-lo, hi), exact: ex})
		}
	}
	return r, g.info[r]
}
