package graph_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

func TestUnaryOps(t *testing.T) {
	erf := math.Erf
	cases := []struct {
		name   string
		lo, hi float64
		op     func(graph.Tensor) graph.Tensor
		ref    func(float64) float64
		tol    float64
	}{
		{"neg", -5, 5, graph.Tensor.Neg, func(x float64) float64 { return -x }, 0},
		{"abs", -5, 5, graph.Tensor.Abs, math.Abs, 0},
		{"exp", -80, 80, graph.Tensor.Exp, math.Exp, 3e-7},
		{"log", 1e-6, 1e6, graph.Tensor.Log, math.Log, 3e-7},
		{"sqrt", 0, 100, graph.Tensor.Sqrt, math.Sqrt, 2e-7},
		{"rsqrt", 1e-3, 100, graph.Tensor.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, 2e-7},
		{"sin", -1000, 1000, graph.Tensor.Sin, math.Sin, 1e-6},
		{"cos", -1000, 1000, graph.Tensor.Cos, math.Cos, 1e-6},
		{"tanh", -12, 12, graph.Tensor.Tanh, math.Tanh, 3e-7},
		{"sigmoid", -30, 30, graph.Tensor.Sigmoid, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, 3e-7},
		{"relu", -5, 5, graph.Tensor.Relu, func(x float64) float64 { return math.Max(x, 0) }, 0},
		{"leaky_relu", -5, 5, func(x graph.Tensor) graph.Tensor { return x.LeakyRelu(0.2) },
			func(x float64) float64 {
				if x < 0 {
					return 0.2 * x
				}
				return x
			}, 1e-7},
		{"gelu", -8, 8, graph.Tensor.Gelu, func(x float64) float64 { return 0.5 * x * (1 + erf(x/math.Sqrt2)) }, 3e-7},
		{"gelu_tanh", -8, 8, graph.Tensor.GeluTanh, func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}, 3e-7},
		{"silu", -20, 20, graph.Tensor.Silu, func(x float64) float64 { return x / (1 + math.Exp(-x)) }, 3e-7},
		{"erf", -5, 5, graph.Tensor.Erf, erf, 3e-7},
		{"floor", -5, 5, graph.Tensor.Floor, math.Floor, 0},
		{"ceil", -5, 5, graph.Tensor.Ceil, math.Ceil, 0},
		{"round", -5, 5, graph.Tensor.Round, math.RoundToEven, 0},
		{"reciprocal", 0.1, 10, graph.Tensor.Reciprocal, func(x float64) float64 { return 1 / x }, 2e-7},
		{"sign", -5, 5, graph.Tensor.Sign, func(x float64) float64 {
			if x > 0 {
				return 1
			} else if x < 0 {
				return -1
			}
			return 0
		}, 0},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Dense, transposed (strided) and broadcast inputs, plus exact
			// halves for rounding.
			a := kerneltest.RandND(rng, c.lo, c.hi, 7, 300).Round32()
			if c.name == "round" {
				a.Data[0], a.Data[1], a.Data[2] = 0.5, 1.5, -2.5
			}
			h := newHarness(t)
			x := h.in(a)
			want := kerneltest.Map(func(v ...float64) float64 { return c.ref(v[0]) }, a)
			wantT := kerneltest.NewND(300, 7)
			for i := 0; i < 7; i++ {
				for j := 0; j < 300; j++ {
					wantT.Data[j*7+i] = want.Data[i*300+j]
				}
			}
			vals := h.eval(c.op(x), c.op(x.T()))
			closeTo(t, c.name, vals[0], want, c.tol)
			closeTo(t, c.name+" of transpose", vals[1], wantT, c.tol)
		})
	}
}

func TestUnaryEdgeValues(t *testing.T) {
	h := newHarness(t)
	inf := math.Inf(1)
	x := h.g.InputF32("x", graph.Shape{6}, []float32{float32(math.NaN()), float32(inf), float32(-inf), 0, -0, 1e-30})
	vals := h.eval(x.Exp(), x.Tanh(), x.Sigmoid(), x.Gelu(), x.Erf())
	exp := vals[0].F32()
	if !math.IsNaN(float64(exp[0])) || !math.IsInf(float64(exp[1]), 1) || exp[2] != 0 || exp[3] != 1 {
		t.Errorf("exp(NaN, +Inf, -Inf, 0) = %v", exp[:4])
	}
	th := vals[1].F32()
	if !math.IsNaN(float64(th[0])) || th[1] != 1 || th[2] != -1 || th[3] != 0 {
		t.Errorf("tanh(NaN, +Inf, -Inf, 0) = %v", th[:4])
	}
	sg := vals[2].F32()
	if !math.IsNaN(float64(sg[0])) || sg[1] != 1 || sg[2] != 0 || sg[3] != 0.5 {
		t.Errorf("sigmoid(NaN, +Inf, -Inf, 0) = %v", sg[:4])
	}
	if e := vals[4].F32(); e[1] != 1 || e[2] != -1 || !math.IsNaN(float64(e[0])) {
		t.Errorf("erf(NaN, +Inf, -Inf) = %v", e[:3])
	}
}

func TestBinaryOpsBroadcast(t *testing.T) {
	ops := []struct {
		name string
		op   func(a, b graph.Tensor) graph.Tensor
		ref  func(a, b float64) float64
		tol  float64
	}{
		{"add", graph.Tensor.Add, func(a, b float64) float64 { return a + b }, 1e-7},
		{"sub", graph.Tensor.Sub, func(a, b float64) float64 { return a - b }, 1e-7},
		{"mul", graph.Tensor.Mul, func(a, b float64) float64 { return a * b }, 1e-7},
		{"div", graph.Tensor.Div, func(a, b float64) float64 { return a / b }, 1e-6},
		{"pow", func(a, b graph.Tensor) graph.Tensor { return a.Abs().Pow(b) }, func(a, b float64) float64 { return math.Pow(math.Abs(a), b) }, 1e-6},
		{"maximum", graph.Tensor.Maximum, math.Max, 0},
		{"minimum", graph.Tensor.Minimum, math.Min, 0},
		{"mod", graph.Tensor.Mod, func(a, b float64) float64 {
			m := math.Mod(a, b)
			if m != 0 && (m < 0) != (b < 0) {
				m += b
			}
			return m
		}, 1e-6},
		{"lt", func(a, b graph.Tensor) graph.Tensor { return a.Lt(b) }, func(a, b float64) float64 { return bf(a < b) }, 0},
		{"le", func(a, b graph.Tensor) graph.Tensor { return a.Le(b) }, func(a, b float64) float64 { return bf(a <= b) }, 0},
		{"gt", func(a, b graph.Tensor) graph.Tensor { return a.Gt(b) }, func(a, b float64) float64 { return bf(a > b) }, 0},
		{"ge", func(a, b graph.Tensor) graph.Tensor { return a.Ge(b) }, func(a, b float64) float64 { return bf(a >= b) }, 0},
		{"eq", func(a, b graph.Tensor) graph.Tensor { return a.Floor().Eq(b.Floor()) }, func(a, b float64) float64 { return bf(math.Floor(a) == math.Floor(b)) }, 0},
		{"ne", func(a, b graph.Tensor) graph.Tensor { return a.Floor().Ne(b.Floor()) }, func(a, b float64) float64 { return bf(math.Floor(a) != math.Floor(b)) }, 0},
	}
	shapes := [][2][]int{
		{{3, 4}, {3, 4}},
		{{3, 4}, {4}},
		{{3, 1}, {1, 5}},
		{{2, 1, 4}, {3, 1}},
		{{1}, {2, 3}},
		{{}, {2, 3}},
		{{0, 3}, {3}},
		{{2, 0}, {1, 0}},
		{{1000}, {1000}},
		{{2, 3, 300}, {3, 1}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, o := range ops {
		for _, s := range shapes {
			a := kerneltest.RandND(rng, -4, 4, s[0]...).Round32()
			b := kerneltest.RandND(rng, 0.5, 3, s[1]...).Round32()
			if o.name != "pow" && o.name != "div" && o.name != "mod" {
				b = kerneltest.RandND(rng, -4, 4, s[1]...).Round32()
			}
			h := newHarness(t)
			x, y := h.in(a), h.in(b)
			want := kerneltest.Map(func(v ...float64) float64 { return o.ref(v[0], v[1]) }, a, b)
			vals := h.eval(o.op(x, y))
			closeTo(t, o.name, vals[0], want, o.tol)
		}
	}
}

func bf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestWhereAndLogic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b, c := kerneltest.RandND(rng, -1, 1, 4, 5).Round32(), kerneltest.RandND(rng, -1, 1, 5).Round32(), kerneltest.RandND(rng, -1, 1, 4, 1).Round32()
	h := newHarness(t)
	x, y, z := h.in(a), h.in(b), h.in(c)
	cond := x.Gt(z).And(y.Gt(h.g.Scalar(0, graph.F32)).Not()).Or(x.Lt(h.g.Scalar(-0.9, graph.F32)))
	out := graph.Where(cond, x, y.Mul(z))
	want := kerneltest.Map(func(v ...float64) float64 {
		if (v[0] > v[2] && !(v[1] > 0)) || v[0] < float64(float32(-0.9)) {
			return v[0]
		}
		return float64(float32(v[1] * v[2]))
	}, a, b, c)
	closeTo(t, "where", h.eval(out)[0], want, 1e-7)
}

func TestCast(t *testing.T) {
	h := newHarness(t)
	x := h.g.InputF32("x", graph.Shape{8}, []float32{-2.7, -0.5, 0, 0.49, 1.5, 2.5, 300.9, 65504})
	vals := h.eval(x.Cast(graph.I64), x.Cast(graph.I32), x.Cast(graph.Bool), x.Cast(graph.F16).Cast(graph.F32),
		x.Cast(graph.BF16).Cast(graph.F32), x.Cast(graph.I64).Cast(graph.F32).Add(x), x.Cast(graph.U8))
	if got := vals[0].I64(); got[0] != -2 || got[1] != 0 || got[4] != 1 || got[6] != 300 {
		t.Errorf("f32→i64 = %v, want truncation toward zero", got)
	}
	if got := vals[1].Float64s(); got[0] != -2 || got[6] != 300 {
		t.Errorf("f32→i32 = %v", got)
	}
	if got := vals[2].Float64s(); got[2] != 0 || got[0] != 1 || got[3] != 1 {
		t.Errorf("f32→bool = %v", got)
	}
	if got := vals[3].F32(); got[3] != 0.48999023 || got[7] != 65504 {
		t.Errorf("f32→f16→f32 = %v", got)
	}
	if got := vals[4].F32(); got[6] != 300 {
		t.Errorf("f32→bf16→f32 = %v (300.9 rounds to 300 in bf16)", got)
	}
	if got := vals[5].F32(); got[0] != -4.7 || got[4] != 2.5 {
		t.Errorf("cast chain = %v", got)
	}
	// Wide integers survive elementwise arithmetic exactly.
	g := h.g
	big := g.InputI64("big", graph.Shape{2}, []int64{1<<40 + 1, -(1 << 50) - 3})
	v := h.eval(big.Add(g.Scalar(1, graph.I64)).Mul(g.Scalar(2, graph.I64)))[0].I64()
	if v[0] != 2*(1<<40+2) || v[1] != 2*(-(1<<50)-2) {
		t.Errorf("i64 arithmetic = %v", v)
	}
}

func TestDequantize(t *testing.T) {
	h := newHarness(t)
	g := h.g
	q := g.Const(graph.U8, graph.Shape{2, 3}, []byte{0, 128, 255, 10, 20, 30})
	scale := g.ConstF32(graph.Shape{2, 1}, []float32{0.5, 0.25})
	zp := g.Const(graph.U8, graph.Shape{2, 1}, []byte{128, 10})
	got := h.eval(q.Dequantize(scale, zp))[0].F32()
	want := []float32{-64, 0, 63.5, 0, 2.5, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("dequantize = %v, want %v", got, want)
		}
	}
}

// TestIntCastArithmeticIsFloat32 checks that arithmetic after an integer is
// cast to float32 is float32 arithmetic, as a separate Cast node would make
// it: 16777217 casts to 16777216, times 3 is 50331648; evaluating the fused
// chain in float64 and rounding once would give 50331652.
func TestIntCastArithmeticIsFloat32(t *testing.T) {
	h := newHarness(t)
	g := h.g
	x := g.InputBytes("x", graph.I32, graph.Shape{2}, []byte{1, 0, 0, 1, 7, 0, 0, 0}) // 16777217, 7
	y := x.Cast(graph.F32).MulScalar(3).AddScalar(0.5)
	z := x.AddScalar(1).Cast(graph.F32) // integer arithmetic first: exact
	vals := h.eval(y, z)
	if got := vals[0].F32(); got[0] != 50331648 || got[1] != 21.5 {
		t.Errorf("cast then multiply: %v, want [50331648 21.5]", got)
	}
	if got := vals[1].F32(); got[0] != 16777218 || got[1] != 8 {
		t.Errorf("add then cast: %v, want [16777218 8]", got)
	}
}
