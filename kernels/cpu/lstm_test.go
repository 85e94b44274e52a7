package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRecurrentOrder checks that recurrent's blocks, read forwards or
// backwards, give the one product over all of W_hh bit for bit, for
// widths whose 4H rows are, and are not, a multiple of the block.
func TestRecurrentOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rec := serialGEMM()
	for _, H := range []int{256, 100, 24} {
		whh := make([]float32, 4*H*H)
		h := make([]float32, H)
		for i := range whh {
			whh[i] = float32(r.NormFloat64())
		}
		for i := range h {
			h[i] = float32(r.NormFloat64())
		}
		want := make([]float32, 4*H)
		rec.SGEMM(false, true, 1, 4*H, H, 1, h, H, whh, H, 0, want, 4*H)
		for _, backwards := range []bool{false, true} {
			got := make([]float32, 4*H)
			for i := range got {
				got[i] = float32(math.NaN()) // every gate must be written
			}
			recurrent(rec, got, h, whh, H, backwards)
			for j := range want {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("H %d, backwards %v: gate %d is %v, one product gives %v", H, backwards, j, got[j], want[j])
				}
			}
		}
	}
}
