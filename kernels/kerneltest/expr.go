package kerneltest

import (
	"math"

	"github.com/tensorforge/forge/kernels"
)

// EvalExpr evaluates a fused expression by its definition over every
// element of shape, reading operand k from ins[k] (broadcast to shape).
// Registers hold float32 values unless e.Wide, so each instruction's
// result is rounded to float32 as kernels.Expr specifies; the result
// register is returned before conversion to any output dtype.
func EvalExpr(e *kernels.Expr, shape []int, ins ...ND) ND {
	out, _ := evalExpr(e, shape, ins)
	return out
}

// evalExpr is EvalExpr that also returns, per element, the largest
// magnitude any register held: rounding errors of a correct backend are
// relative to it, not to the result (which cancellation can make small).
func evalExpr(e *kernels.Expr, shape []int, ins []ND) (out, mag ND) {
	out, mag = NewND(shape...), NewND(shape...)
	regs := make([]float64, e.NumRegs)
	round := func(x float64) float64 {
		if e.Wide {
			return x
		}
		return float64(float32(x))
	}
	for i := range out.Data {
		idx := Unravel(i, shape)
		m := 0.0
		for _, in := range e.Code {
			var v float64
			switch in.Op {
			case kernels.ELoad:
				v = ins[in.A].At(idx)
			case kernels.EConst:
				v = in.Imm
			default:
				v = EvalEOp(in.Op, regs[in.A], regs[in.B], regs[in.C], in.Imm)
			}
			regs[in.Dst] = round(v)
			if a := math.Abs(regs[in.Dst]); a > m && !math.IsInf(a, 0) {
				m = a
			}
		}
		out.Data[i] = regs[e.Result]
		mag.Data[i] = m
	}
	return out, mag
}

// EvalEOp is the meaning of one expression instruction in float64, written
// from the kernels.EOp documentation independently of any backend.
func EvalEOp(op kernels.EOp, a, b, c, imm float64) float64 {
	bool2f := func(x bool) float64 {
		if x {
			return 1
		}
		return 0
	}
	switch op {
	case kernels.ENeg:
		return -a
	case kernels.EAbs:
		return math.Abs(a)
	case kernels.EExp:
		return math.Exp(a)
	case kernels.ELog:
		return math.Log(a)
	case kernels.ESqrt:
		return math.Sqrt(a)
	case kernels.ERsqrt:
		return 1 / math.Sqrt(a)
	case kernels.ESin:
		return math.Sin(a)
	case kernels.ECos:
		return math.Cos(a)
	case kernels.ETanh:
		return math.Tanh(a)
	case kernels.ESigmoid:
		return 1 / (1 + math.Exp(-a))
	case kernels.ERelu:
		if a < 0 {
			return 0
		}
		return a
	case kernels.ELeakyRelu:
		if a < 0 {
			return a * imm
		}
		return a
	case kernels.EGeluErf:
		return 0.5 * a * (1 + math.Erf(a/math.Sqrt2))
	case kernels.EGeluTanh:
		return 0.5 * a * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(a+0.044715*a*a*a)))
	case kernels.ESilu:
		return a / (1 + math.Exp(-a))
	case kernels.EErf:
		return math.Erf(a)
	case kernels.EFloor:
		return math.Floor(a)
	case kernels.ECeil:
		return math.Ceil(a)
	case kernels.ERound:
		return math.RoundToEven(a)
	case kernels.ETrunc:
		return math.Trunc(a)
	case kernels.ERecip:
		return 1 / a
	case kernels.ESign:
		switch {
		case a > 0:
			return 1
		case a < 0:
			return -1
		}
		return a // ±0 or NaN
	case kernels.EIsNaN:
		return bool2f(math.IsNaN(a))
	case kernels.ENot:
		return bool2f(a == 0)
	case kernels.ERoundF16:
		return float64(kernels.F16ToF32(kernels.F32ToF16(float32(a))))
	case kernels.ERoundBF16:
		return float64(kernels.BF16ToF32(kernels.F32ToBF16(float32(a))))
	case kernels.EAdd:
		return a + b
	case kernels.ESub:
		return a - b
	case kernels.EMul:
		return a * b
	case kernels.EDiv:
		return a / b
	case kernels.EPow:
		return math.Pow(a, b)
	case kernels.EMax:
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Max(a, b)
	case kernels.EMin:
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Min(a, b)
	case kernels.EMod:
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m
	case kernels.EEq:
		return bool2f(a == b)
	case kernels.ENe:
		return bool2f(a != b)
	case kernels.ELt:
		return bool2f(a < b)
	case kernels.ELe:
		return bool2f(a <= b)
	case kernels.EGt:
		return bool2f(a > b)
	case kernels.EGe:
		return bool2f(a >= b)
	case kernels.EAnd:
		return bool2f(a != 0 && b != 0)
	case kernels.EOr:
		return bool2f(a != 0 || b != 0)
	case kernels.EWhere:
		if a != 0 {
			return b
		}
		return c
	}
	return math.NaN()
}
