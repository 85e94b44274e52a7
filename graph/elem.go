package graph

import (
	"github.com/tensorforge/forge/kernels"
)

// unary appends a one-input elementwise node.
func (t Tensor) unary(name string, op kernels.EOp, imm float64, floatOnly bool) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check(name, t); !ok {
		return bad
	}
	n := t.node()
	if floatOnly && !n.dtype.IsFloat() {
		return g.failf(name, "needs a floating-point input, got %s%v", n.dtype, n.shape)
	}
	if n.dtype == Bool && op != kernels.ENot && op != kernels.EIsNaN {
		return g.failf(name, "is not defined for bool input %v", n.shape)
	}
	dt := n.dtype
	if op == kernels.ENot || op == kernels.EIsNaN {
		dt = Bool
	}
	return g.add(node{op: opElem, eop: op, imm: imm, in: []uint32{t.id}, shape: n.shape, dtype: dt})
}

// binary appends a two-input elementwise node with NumPy broadcasting. Both
// inputs must have the same dtype: Forge never promotes silently.
func (t Tensor) binary(name string, op kernels.EOp, o Tensor) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check(name, t, o); !ok {
		return bad
	}
	a, b := t.node(), o.node()
	if a.dtype != b.dtype {
		return g.failf(name, "dtypes differ: %s%v and %s%v (cast one explicitly)", a.dtype, a.shape, b.dtype, b.shape)
	}
	shape, err := Broadcast(a.shape, b.shape)
	if err != nil {
		return g.failf(name, "%v", err)
	}
	dt := a.dtype
	switch op {
	case kernels.EEq, kernels.ENe, kernels.ELt, kernels.ELe, kernels.EGt, kernels.EGe, kernels.EAnd, kernels.EOr:
		dt = Bool
	default:
		if a.dtype == Bool {
			return g.failf(name, "is not defined for bool inputs %v and %v", a.shape, b.shape)
		}
	}
	return g.add(node{op: opElem, eop: op, in: []uint32{t.id, o.id}, shape: shape, dtype: dt})
}

// scalarLike returns a 0-d constant with t's dtype.
func (t Tensor) scalarLike(v float64) Tensor {
	if t.g == nil {
		return Tensor{}
	}
	dt := t.DType()
	if !dt.Valid() {
		dt = F32
	}
	return t.g.Scalar(v, dt)
}

// Neg returns −t.
func (t Tensor) Neg() Tensor { return t.unary("neg", kernels.ENeg, 0, false) }

// Abs returns |t|.
func (t Tensor) Abs() Tensor { return t.unary("abs", kernels.EAbs, 0, false) }

// Exp returns eᵗ.
func (t Tensor) Exp() Tensor { return t.unary("exp", kernels.EExp, 0, true) }

// Log returns the natural logarithm.
func (t Tensor) Log() Tensor { return t.unary("log", kernels.ELog, 0, true) }

// Sqrt returns the square root.
func (t Tensor) Sqrt() Tensor { return t.unary("sqrt", kernels.ESqrt, 0, true) }

// Rsqrt returns 1/√t.
func (t Tensor) Rsqrt() Tensor { return t.unary("rsqrt", kernels.ERsqrt, 0, true) }

// Sin returns the sine.
func (t Tensor) Sin() Tensor { return t.unary("sin", kernels.ESin, 0, true) }

// Cos returns the cosine.
func (t Tensor) Cos() Tensor { return t.unary("cos", kernels.ECos, 0, true) }

// Tanh returns the hyperbolic tangent.
func (t Tensor) Tanh() Tensor { return t.unary("tanh", kernels.ETanh, 0, true) }

// Sigmoid returns 1/(1+e⁻ᵗ).
func (t Tensor) Sigmoid() Tensor { return t.unary("sigmoid", kernels.ESigmoid, 0, true) }

// Relu returns max(t, 0).
func (t Tensor) Relu() Tensor { return t.unary("relu", kernels.ERelu, 0, false) }

// LeakyRelu returns t where t ≥ 0, else slope·t.
func (t Tensor) LeakyRelu(slope float64) Tensor {
	return t.unary("leaky_relu", kernels.ELeakyRelu, slope, true)
}

// Gelu returns the exact (erf) GELU, as torch.nn.GELU().
func (t Tensor) Gelu() Tensor { return t.unary("gelu", kernels.EGeluErf, 0, true) }

// GeluTanh returns the tanh approximation of GELU (approximate="tanh").
func (t Tensor) GeluTanh() Tensor { return t.unary("gelu_tanh", kernels.EGeluTanh, 0, true) }

// Silu returns t·sigmoid(t).
func (t Tensor) Silu() Tensor { return t.unary("silu", kernels.ESilu, 0, true) }

// Erf returns the error function.
func (t Tensor) Erf() Tensor { return t.unary("erf", kernels.EErf, 0, true) }

// Floor rounds toward −∞.
func (t Tensor) Floor() Tensor { return t.unary("floor", kernels.EFloor, 0, true) }

// Ceil rounds toward +∞.
func (t Tensor) Ceil() Tensor { return t.unary("ceil", kernels.ECeil, 0, true) }

// Round rounds half to even, as torch.round.
func (t Tensor) Round() Tensor { return t.unary("round", kernels.ERound, 0, true) }

// Reciprocal returns 1/t.
func (t Tensor) Reciprocal() Tensor { return t.unary("reciprocal", kernels.ERecip, 0, true) }

// Sign returns −1, 0 or 1.
func (t Tensor) Sign() Tensor { return t.unary("sign", kernels.ESign, 0, false) }

// Not returns the logical negation (true where t is zero/false).
func (t Tensor) Not() Tensor { return t.unary("not", kernels.ENot, 0, false) }

// IsNaN returns true where t is NaN.
func (t Tensor) IsNaN() Tensor { return t.unary("isnan", kernels.EIsNaN, 0, true) }

// Add returns t + o with broadcasting.
func (t Tensor) Add(o Tensor) Tensor { return t.binary("add", kernels.EAdd, o) }

// Sub returns t − o with broadcasting.
func (t Tensor) Sub(o Tensor) Tensor { return t.binary("sub", kernels.ESub, o) }

// Mul returns t · o with broadcasting.
func (t Tensor) Mul(o Tensor) Tensor { return t.binary("mul", kernels.EMul, o) }

// Div returns t / o with broadcasting (true division; integer inputs give
// the quotient truncated on store).
func (t Tensor) Div(o Tensor) Tensor { return t.binary("div", kernels.EDiv, o) }

// Pow returns tᵒ with broadcasting.
func (t Tensor) Pow(o Tensor) Tensor { return t.binary("pow", kernels.EPow, o) }

// Maximum returns the elementwise maximum (NaN-propagating).
func (t Tensor) Maximum(o Tensor) Tensor { return t.binary("maximum", kernels.EMax, o) }

// Minimum returns the elementwise minimum (NaN-propagating).
func (t Tensor) Minimum(o Tensor) Tensor { return t.binary("minimum", kernels.EMin, o) }

// Mod returns the floor modulo (sign of the divisor), as torch.remainder.
func (t Tensor) Mod(o Tensor) Tensor { return t.binary("mod", kernels.EMod, o) }

// Eq returns t == o.
func (t Tensor) Eq(o Tensor) Tensor { return t.binary("eq", kernels.EEq, o) }

// Ne returns t != o.
func (t Tensor) Ne(o Tensor) Tensor { return t.binary("ne", kernels.ENe, o) }

// Lt returns t < o.
func (t Tensor) Lt(o Tensor) Tensor { return t.binary("lt", kernels.ELt, o) }

// Le returns t <= o.
func (t Tensor) Le(o Tensor) Tensor { return t.binary("le", kernels.ELe, o) }

// Gt returns t > o.
func (t Tensor) Gt(o Tensor) Tensor { return t.binary("gt", kernels.EGt, o) }

// Ge returns t >= o.
func (t Tensor) Ge(o Tensor) Tensor { return t.binary("ge", kernels.EGe, o) }

// And returns the logical and of two bool tensors.
func (t Tensor) And(o Tensor) Tensor { return t.binary("and", kernels.EAnd, o) }

// Or returns the logical or of two bool tensors.
func (t Tensor) Or(o Tensor) Tensor { return t.binary("or", kernels.EOr, o) }

// AddScalar returns t + v.
func (t Tensor) AddScalar(v float64) Tensor { return t.Add(t.scalarLike(v)) }

// MulScalar returns t · v.
func (t Tensor) MulScalar(v float64) Tensor { return t.Mul(t.scalarLike(v)) }

// PowScalar returns tᵛ.
func (t Tensor) PowScalar(v float64) Tensor { return t.Pow(t.scalarLike(v)) }

// Clamp limits t to [lo, hi].
func (t Tensor) Clamp(lo, hi float64) Tensor {
	return t.Maximum(t.scalarLike(lo)).Minimum(t.scalarLike(hi))
}

// Where returns a where cond is true, else b, with broadcasting over all
// three. cond must be Bool; a and b share a dtype.
func Where(cond, a, b Tensor) Tensor {
	g := cond.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("where", cond, a, b); !ok {
		return bad
	}
	c, x, y := cond.node(), a.node(), b.node()
	if c.dtype != Bool {
		return g.failf("where", "condition must be bool, got %s%v", c.dtype, c.shape)
	}
	if x.dtype != y.dtype {
		return g.failf("where", "branches differ in dtype: %s%v and %s%v", x.dtype, x.shape, y.dtype, y.shape)
	}
	shape, err := Broadcast(c.shape, x.shape, y.shape)
	if err != nil {
		return g.failf("where", "%v", err)
	}
	return g.add(node{op: opElem, eop: kernels.EWhere, in: []uint32{cond.id, a.id, b.id}, shape: shape, dtype: x.dtype})
}

// Cast converts t to dtype: float→integer truncates toward zero (as
// torch's .long()), anything→bool tests for non-zero, integer→float is exact
// where the float can hold the value.
func (t Tensor) Cast(dtype DType) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("cast", t); !ok {
		return bad
	}
	if !dtype.Valid() {
		return g.failf("cast", "invalid target dtype %s", dtype)
	}
	n := t.node()
	if n.dtype == dtype {
		return t
	}
	return g.add(node{op: opCast, in: []uint32{t.id}, shape: n.shape, dtype: dtype})
}

// Dequantize returns (q − zeroPoint)·scale in float32, as ONNX
// DequantizeLinear: q is U8 or I8; scale (F32) and zeroPoint (q's dtype)
// broadcast against q (a per-channel scale is a [C, 1] tensor for a [C, K]
// weight).
func (t Tensor) Dequantize(scale, zeroPoint Tensor) Tensor {
	g := t.g
	if g == nil {
		return Tensor{}
	}
	if bad, ok := g.check("dequantize", t, scale, zeroPoint); !ok {
		return bad
	}
	if d := t.DType(); d != U8 && d != I8 {
		return g.failf("dequantize", "quantized input must be u8 or i8, got %s%v", d, t.Shape())
	}
	if scale.DType() != F32 {
		return g.failf("dequantize", "scale must be f32, got %s%v", scale.DType(), scale.Shape())
	}
	if zeroPoint.DType() != t.DType() {
		return g.failf("dequantize", "zero point dtype %s differs from the quantized input's %s", zeroPoint.DType(), t.DType())
	}
	return t.Cast(F32).Sub(zeroPoint.Cast(F32)).Mul(scale)
}
