package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

func ulpDiff(a, b float32) float64 {
	if a == b {
		return 0
	}
	return math.Abs(float64(a)-float64(b)) / math.Max(math.Abs(float64(b)), 1e-38) / math.Pow(2, -23)
}

func TestExpSubMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 16, 17, 100, 1500} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.Float64()*200 - 110)
		}
		src[0] = 0
		if n > 3 {
			src[1], src[2], src[3] = float32(math.Inf(-1)), 88.5, -103.5
		}
		dst := make([]float32, n)
		sum := ExpSub(dst, src, 0)
		var want64 float64
		for i, v := range src {
			w := math.Exp(float64(v))
			want64 += float64(float32(w))
			if d := ulpDiff(dst[i], float32(w)); d > 2 && !(w < 1e-37 && math.Abs(float64(dst[i])-w) < 1e-44) {
				t.Fatalf("n=%d: exp(%v) = %v, want %v (%.1f ulp)", n, v, dst[i], float32(w), d)
			}
		}
		if math.Abs(float64(sum)-want64) > 1e-5*math.Abs(want64)+1e-30 {
			t.Fatalf("n=%d: sum %v, want %v", n, sum, want64)
		}
	}
	// NaN and +Inf pass through; the shift applies.
	src := []float32{float32(math.NaN()), float32(math.Inf(1)), 3}
	dst := make([]float32, 3)
	ExpSub(dst, src, 1)
	if !math.IsNaN(float64(dst[0])) || !math.IsInf(float64(dst[1]), 1) || ulpDiff(dst[2], float32(math.Exp(2))) > 2 {
		t.Errorf("exp(NaN, +Inf, 3−1) = %v", dst)
	}
}

func TestMaxScaleSigmoid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 5, 16, 33, 1000} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * 10)
		}
		want := src[0]
		for _, v := range src {
			want = max(want, v)
		}
		if got := Max(src); got != want {
			t.Fatalf("n=%d: Max = %v, want %v", n, got, want)
		}
		src[n/2] = float32(math.NaN())
		if got := Max(src); !math.IsNaN(float64(got)) {
			t.Fatalf("n=%d: Max with NaN = %v", n, got)
		}
		src[n/2] = 1
		dst := make([]float32, n)
		Sigmoid(dst, src)
		for i, v := range src {
			w := 1 / (1 + math.Exp(-float64(v)))
			if math.Abs(float64(dst[i])-w) > 2e-7 {
				t.Fatalf("sigmoid(%v) = %v, want %v", v, dst[i], w)
			}
		}
		c := append([]float32(nil), src...)
		Scale(c, 0.5)
		for i := range c {
			if c[i] != src[i]*0.5 {
				t.Fatalf("Scale: %v vs %v", c[i], src[i]*0.5)
			}
		}
	}
	if got := Sigmoid32(-200); got != 0 {
		t.Errorf("Sigmoid32(-200) = %v", got)
	}
}

func BenchmarkExpSub1500(b *testing.B) {
	src := make([]float32, 1500)
	for i := range src {
		src[i] = float32(i%50) - 40
	}
	dst := make([]float32, 1500)
	b.SetBytes(1500 * 4)
	for i := 0; i < b.N; i++ {
		ExpSub(dst, src, 3)
	}
}

// BenchmarkExpSubLogits is a decoder step's log-sum-exp: Whisper's 51,865
// logits shifted by their maximum, the 1,501 timestamp tokens masked to
// −∞, as the timestamp rules leave them on most text tokens. On Intel cores
// a lane whose eˣ underflows costs a microcode assist unless EXP skips
// its scaling.
func BenchmarkExpSubLogits(b *testing.B) {
	src := make([]float32, 51865)
	for i := range src {
		src[i] = float32(i%61) - 50
	}
	for i := 50364; i < len(src); i++ {
		src[i] = float32(math.Inf(-1))
	}
	dst := make([]float32, len(src))
	b.SetBytes(int64(len(src)) * 4)
	for b.Loop() {
		ExpSub(dst, src, 10)
	}
}

func BenchmarkExpScalar1500(b *testing.B) {
	src := make([]float32, 1500)
	for i := range src {
		src[i] = float32(i%50) - 40
	}
	dst := make([]float32, 1500)
	b.SetBytes(1500 * 4)
	for i := 0; i < b.N; i++ {
		expSubGo(dst, src, 3)
	}
}

func TestTanhGeluMatchFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 15, 16, 40, 3001} {
		src := make([]float32, n)
		for i := range src {
			switch i % 4 {
			case 0:
				src[i] = float32(rng.NormFloat64() * 0.05) // small branch
			case 1:
				src[i] = float32(rng.NormFloat64() * 3)
			case 2:
				src[i] = float32(rng.Float64()*40 - 20)
			default:
				src[i] = float32(rng.NormFloat64())
			}
		}
		th, ge := make([]float32, n), make([]float32, n)
		Tanh(th, src)
		GeluErf(ge, src)
		for i, v := range src {
			x := float64(v)
			if w := math.Tanh(x); math.Abs(float64(th[i])-w) > 2.5e-7*math.Max(1, math.Abs(w)) || math.Abs(float64(th[i])-w) > 4*ulp(w) {
				t.Fatalf("tanh(%v) = %v, want %v", v, th[i], w)
			}
			w := 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
			if math.Abs(float64(ge[i])-w) > 3e-7*math.Max(1, math.Abs(x)) {
				t.Fatalf("gelu(%v) = %v, want %v", v, ge[i], w)
			}
			// The scalar and vector forms agree to rounding.
			if s := GeluErf32(v); math.Abs(float64(s-ge[i])) > 2e-7*math.Max(1, math.Abs(x)) {
				t.Fatalf("gelu(%v): scalar %v, vector %v", v, s, ge[i])
			}
		}
	}
	inf := float32(math.Inf(1))
	src := []float32{float32(math.NaN()), inf, -inf, 0}
	th := make([]float32, 4)
	Tanh(th, src)
	if !math.IsNaN(float64(th[0])) || th[1] != 1 || th[2] != -1 || th[3] != 0 {
		t.Errorf("tanh(NaN, ±Inf, 0) = %v", th)
	}
	ge := make([]float32, 4)
	GeluErf(ge, src)
	if !math.IsNaN(float64(ge[0])) || !math.IsInf(float64(ge[1]), 1) || ge[3] != 0 {
		t.Errorf("gelu(NaN, +Inf, 0) = %v", ge)
	}
}

func ulp(x float64) float64 {
	f := float32(math.Abs(x))
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

func BenchmarkGelu(b *testing.B) {
	src := make([]float32, 1536)
	for i := range src {
		src[i] = float32(i%97)/10 - 5
	}
	dst := make([]float32, 1536)
	for i := 0; i < b.N; i++ {
		GeluErf(dst, src)
	}
}

func BenchmarkGeluScalar(b *testing.B) {
	src := make([]float32, 1536)
	for i := range src {
		src[i] = float32(i%97)/10 - 5
	}
	dst := make([]float32, 1536)
	for i := 0; i < b.N; i++ {
		geluGo(dst, src)
	}
}

func TestSinCosMatchFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, scale := range []float64{1, 10, 1000, 60000, 1e6} {
		src := make([]float32, 1001)
		for i := range src {
			src[i] = float32((rng.Float64()*2 - 1) * scale)
		}
		src[0], src[1] = 0, float32(math.Pi/2)
		s, c := make([]float32, len(src)), make([]float32, len(src))
		Sin(s, src)
		Cos(c, src)
		for i, v := range src {
			ws, wc := math.Sin(float64(v)), math.Cos(float64(v))
			if math.Abs(float64(s[i])-ws) > 2.5e-7 || math.Abs(float64(c[i])-wc) > 2.5e-7 {
				t.Fatalf("scale %g: sin/cos(%v) = %v, %v; want %v, %v", scale, v, s[i], c[i], ws, wc)
			}
		}
	}
	src := []float32{float32(math.NaN()), float32(math.Inf(1))}
	s := make([]float32, 2)
	Sin(s, src)
	if !math.IsNaN(float64(s[0])) || !math.IsNaN(float64(s[1])) {
		t.Errorf("sin(NaN, Inf) = %v", s)
	}
}

// TestSinCosInPlace: dst may alias src, also for arguments beyond the
// vector reduction's range (redone in float64 from src).
func TestSinCosInPlace(t *testing.T) {
	src := make([]float32, 600)
	for i := range src {
		src[i] = float32(i) * 0.37
		if i%7 == 0 {
			src[i] = -1e30 / float32(i+1)
		}
	}
	for _, f := range []func(dst, src []float32){Sin, Cos} {
		want := make([]float32, len(src))
		f(want, src)
		got := append([]float32(nil), src...)
		f(got, got)
		for i := range want {
			if got[i] != want[i] && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("in place: element %d (%v) is %v, want %v", i, src[i], got[i], want[i])
			}
		}
	}
}

func BenchmarkSin(b *testing.B) {
	src := make([]float32, 4096)
	for i := range src {
		src[i] = float32(i) * 0.37
	}
	dst := make([]float32, 4096)
	for i := 0; i < b.N; i++ {
		Sin(dst, src)
	}
}

func BenchmarkSinScalar(b *testing.B) {
	src := make([]float32, 4096)
	for i := range src {
		src[i] = float32(i) * 0.37
	}
	dst := make([]float32, 4096)
	for i := 0; i < b.N; i++ {
		sinqGo(dst, src, 0)
	}
}

func TestErfMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	src := make([]float32, 2003)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * []float64{0.1, 1, 4}[i%3])
	}
	src[0], src[1], src[2], src[3] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0
	dst := make([]float32, len(src))
	Erf(dst, src)
	if !math.IsNaN(float64(dst[0])) || dst[1] != 1 || dst[2] != -1 || dst[3] != 0 {
		t.Fatalf("erf(NaN, +Inf, -Inf, 0) = %v", dst[:4])
	}
	for i, v := range src[4:] {
		w := math.Erf(float64(v))
		if math.Abs(float64(dst[i+4])-w) > 2.5e-7 {
			t.Fatalf("erf(%v) = %v, want %v", v, dst[i+4], w)
		}
		if s := Erf32(v); math.Abs(float64(s-dst[i+4])) > 2e-7 {
			t.Fatalf("erf(%v): scalar %v, vector %v", v, s, dst[i+4])
		}
	}
}
