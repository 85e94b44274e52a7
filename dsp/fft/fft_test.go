package fft

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"sync"
	"testing"
)

// naiveDFT is the O(n²) definition in float64: the reference.
func naiveDFT(x []complex128, sign float64) []complex128 {
	n := len(x)
	out := make([]complex128, n)
	for k := range n {
		var acc complex128
		for j, v := range x {
			acc += v * cmplx.Rect(1, sign*2*math.Pi*float64((j*k)%n)/float64(n))
		}
		out[k] = acc
	}
	return out
}

// relErr is ‖got − want‖₂ / ‖want‖₂ (or the absolute norm when want is 0).
func relErr(got []complex64, want []complex128) float64 {
	var num, den float64
	for i := range want {
		d := complex128(got[i]) - want[i]
		num += real(d)*real(d) + imag(d)*imag(d)
		den += real(want[i])*real(want[i]) + imag(want[i])*imag(want[i])
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

var lengths = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 20, 25, 27, 30, 32, 49, 60, 64, 77, 97, 100, 128, 200, 256, 400, 480, 512, 1000, 1024, 2048}

func randComplex(rng *rand.Rand, n int) ([]complex64, []complex128) {
	x := make([]complex64, n)
	x64 := make([]complex128, n)
	for i := range x {
		x[i] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
		x64[i] = complex128(x[i])
	}
	return x, x64
}

func TestComplexAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range lengths {
		p, err := NewPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		x, x64 := randComplex(rng, n)
		keep := append([]complex64(nil), x...)
		got := make([]complex64, n)
		p.Forward(got, x)
		if e := relErr(got, naiveDFT(x64, -1)); e > 2e-6 {
			t.Errorf("n=%d forward rel err %.3g", n, e)
		}
		if relErr(x, x64) != 0 || relErr(keep, x64) != 0 {
			t.Fatalf("n=%d: Forward modified src", n)
		}
		inv := make([]complex64, n)
		p.Inverse(inv, x)
		want := naiveDFT(x64, 1)
		for i := range want {
			want[i] /= complex(float64(n), 0)
		}
		if e := relErr(inv, want); e > 2e-6 {
			t.Errorf("n=%d inverse rel err %.3g", n, e)
		}
		// In place, and round trip.
		p.Forward(x, x)
		p.Inverse(x, x)
		if e := relErr(x, x64); e > 2e-6 {
			t.Errorf("n=%d in-place round trip rel err %.3g", n, e)
		}
	}
}

func TestRealAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, n := range lengths {
		p, err := NewRealPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n)
		x64 := make([]complex128, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			x64[i] = complex(float64(x[i]), 0)
		}
		spec := make([]complex64, p.Bins())
		p.Forward(spec, x)
		full := naiveDFT(x64, -1)
		if e := relErr(spec, full[:p.Bins()]); e > 2e-6 {
			t.Errorf("n=%d rfft rel err %.3g", n, e)
		}
		back := make([]float32, n)
		p.Inverse(back, spec)
		var num, den float64
		for i := range x {
			d := float64(back[i] - x[i])
			num += d * d
			den += float64(x[i]) * float64(x[i])
		}
		if e := math.Sqrt(num / den); e > 2e-6 {
			t.Errorf("n=%d irfft(rfft(x)) rel err %.3g", n, e)
		}
	}
}

// TestRealInverseIgnoresImaginaryEdges checks the torch/numpy irfft
// convention on a spectrum that is not the rfft of anything: the imaginary
// parts of the DC and Nyquist bins are dropped, and the missing half is the
// conjugate mirror.
func TestRealInverseIgnoresImaginaryEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, 2, 5, 8, 9, 20, 400} {
		p, _ := NewRealPlan(n)
		bins := p.Bins()
		spec := make([]complex64, bins)
		for k := range spec {
			spec[k] = complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
		}
		full := make([]complex128, n)
		for k := range bins {
			full[k] = complex128(spec[k])
		}
		full[0] = complex(real(full[0]), 0)
		if n%2 == 0 {
			full[n/2] = complex(real(full[n/2]), 0)
		}
		for k := 1; k < bins; k++ {
			if n-k >= bins || n%2 == 1 {
				full[n-k] = cmplx.Conj(full[k])
			}
		}
		want := naiveDFT(full, 1)
		got := make([]float32, n)
		p.Inverse(got, spec)
		for i := range got {
			w := real(want[i]) / float64(n)
			if math.Abs(float64(got[i])-w) > 1e-5 {
				t.Fatalf("n=%d x[%d] = %v, want %v", n, i, got[i], w)
			}
		}
	}
}

func TestNoAllocs(t *testing.T) {
	for _, n := range []int{20, 400, 512, 97} {
		p, _ := NewPlan(n)
		rp, _ := NewRealPlan(n)
		c := make([]complex64, n)
		d := make([]complex64, n)
		r := make([]float32, n)
		s := make([]complex64, rp.Bins())
		if a := testing.AllocsPerRun(20, func() {
			p.Forward(d, c)
			p.Inverse(c, d)
			rp.Forward(s, r)
			rp.Inverse(r, s)
		}); a != 0 {
			t.Errorf("n=%d: %v allocations per call", n, a)
		}
	}
}

func TestBadLength(t *testing.T) {
	if _, err := NewPlan(0); err == nil {
		t.Error("NewPlan(0) succeeded")
	}
	if _, err := NewRealPlan(-3); err == nil {
		t.Error("NewRealPlan(-3) succeeded")
	}
	p, _ := NewPlan(8)
	defer func() {
		if recover() == nil {
			t.Error("Forward with a short dst did not panic")
		}
	}()
	p.Forward(make([]complex64, 4), make([]complex64, 8))
}

// TestClonesConcurrently runs clones on several goroutines (meaningful
// under -race) and checks they agree with the original.
func TestClonesConcurrently(t *testing.T) {
	p, _ := NewRealPlan(400)
	x := make([]float32, 400)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.3))
	}
	want := make([]complex64, p.Bins())
	p.Forward(want, x)
	var wg sync.WaitGroup
	for range 4 {
		c := p.Clone()
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := make([]complex64, c.Bins())
			for range 100 {
				c.Forward(got, x)
			}
			for k := range got {
				if got[k] != want[k] {
					t.Errorf("clone bin %d = %v, want %v", k, got[k], want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func benchReal(b *testing.B, n int) {
	p, _ := NewRealPlan(n)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i % 7)
	}
	s := make([]complex64, p.Bins())
	b.ResetTimer()
	for range b.N {
		p.Forward(s, x)
	}
}

func BenchmarkRealForward20(b *testing.B)  { benchReal(b, 20) }
func BenchmarkRealForward400(b *testing.B) { benchReal(b, 400) }
func BenchmarkRealForward512(b *testing.B) { benchReal(b, 512) }

func BenchmarkComplexForward1024(b *testing.B) {
	p, _ := NewPlan(1024)
	x := make([]complex64, 1024)
	for range b.N {
		p.Forward(x, x)
	}
}
