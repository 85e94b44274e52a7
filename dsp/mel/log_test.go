package mel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestLog10f(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var worst float64
	check := func(x float32) {
		ref := math.Log10(float64(x))
		d := math.Abs(float64(log10f(x))-ref) / max(1, math.Abs(ref))
		worst = max(worst, d)
	}
	for range 200000 {
		check(float32(math.Pow(10, rng.Float64()*30-10))) // 1e-10 … 1e20
	}
	for _, x := range []float32{1e-10, 1, 10, 0.5, 2, math.Sqrt2, math.MaxFloat32, math.SmallestNonzeroFloat32 * (1 << 23)} {
		check(x)
	}
	// A few float32 roundings, relative to max(1, |log10 x|).
	if worst > 3e-7 {
		t.Errorf("max relative |log10f − log10| = %.3g", worst)
	}
	t.Logf("max relative |log10f − log10| = %.3g", worst)
}
