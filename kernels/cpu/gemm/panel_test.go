package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/internal/procstat"
)

// TestPanelMulAdd checks PanelB.MulAdd against a float64 reference over
// shapes that cover full and narrow tail panels, odd and even depths, row
// counts around the four-row block, both B layouts, and rows that are
// overlapping windows of one buffer (as a convolution reads them).
func TestPanelMulAdd(t *testing.T) {
	cases := []struct {
		m, k, n  int
		transB   bool
		overlap  int // > 0: row i of A starts at i·overlap in one buffer
		describe string
	}{
		{1, 1, 1, false, 0, "smallest"},
		{1, 256, 512, true, 0, "LSTM cell, one stream"},
		{1, 255, 64, false, 0, "odd depth, one row"},
		{4, 387, 128, true, 129, "3-tap convolution, stride 1"},
		{2, 384, 64, true, 256, "3-tap convolution, stride 2"},
		{4, 256, 258, false, 128, "STFT frames at hop 128, tail panel of 2"},
		{7, 64, 100, false, 0, "four-row block and three single rows, tail 36"},
		{9, 129, 65, true, 0, "tail panel of 1"},
		{64, 256, 512, true, 0, "LSTM cell, 64 streams"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%dx%dx%d/%s", tc.m, tc.k, tc.n, tc.describe), func(t *testing.T) {
			ldb := tc.n
			if tc.transB {
				ldb = tc.k
			}
			b := randSlice(rng, tc.k*tc.n)
			p := PackPanels(tc.transB, tc.k, tc.n, b, ldb)
			bAt := func(d, j int) float64 {
				if tc.transB {
					return float64(b[j*ldb+d])
				}
				return float64(b[d*ldb+j])
			}
			a := make([][]float32, tc.m)
			if tc.overlap > 0 {
				buf := randSlice(rng, (tc.m-1)*tc.overlap+tc.k)
				for i := range a {
					a[i] = buf[i*tc.overlap : i*tc.overlap+tc.k]
				}
			} else {
				for i := range a {
					a[i] = randSlice(rng, tc.k)
				}
			}
			c := make([][]float32, tc.m)
			want := make([][]float64, tc.m)
			for i := range c {
				c[i] = randSlice(rng, tc.n+3) // longer than N: the rest stays
				want[i] = make([]float64, tc.n+3)
				for j := range want[i] {
					want[i][j] = float64(c[i][j])
				}
				for j := range tc.n {
					for d := range tc.k {
						want[i][j] += float64(a[i][d]) * bAt(d, j)
					}
				}
			}
			p.MulAdd(c, a)
			for i := range c {
				for j := range c[i] {
					tol := 1e-5 * float64(tc.k+1)
					if d := math.Abs(float64(c[i][j]) - want[i][j]); !(d <= tol) {
						t.Fatalf("c[%d][%d] = %g, want %g (|d| %.3g > %.3g)", i, j, c[i][j], want[i][j], d, tol)
					}
				}
			}
		})
	}
}

// TestPanelKernelsAgree: the portable kernels and the SIMD ones give the
// same sums (up to rounding order) on the same panel.
func TestPanelKernelsAgree(t *testing.T) {
	if PanelPath() == "go" {
		t.Skip("only the portable panel kernels run on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 2, 3, 64, 387} {
		t.Run(fmt.Sprint("k=", k), func(t *testing.T) {
			b := randSlice(rng, k*PanelWidth)
			a := [][]float32{randSlice(rng, k), randSlice(rng, k), randSlice(rng, k), randSlice(rng, k)}
			var simd, port [4][]float32
			for r := range 4 {
				simd[r] = randSlice(rng, PanelWidth)
				port[r] = append([]float32(nil), simd[r]...)
			}
			panel4(k, b, a, simd[0], simd[1], simd[2], simd[3])
			panel4Go(k, b, a, port[0], port[1], port[2], port[3])
			one := append([]float32(nil), port[0]...)
			oneGo := append([]float32(nil), port[0]...)
			panel1(k, b, a[1], one)
			panel1Go(k, b, a[1], oneGo)
			check := func(what string, got, want []float32) {
				for j := range got {
					if d := math.Abs(float64(got[j] - want[j])); !(d <= 1e-5*float64(k)) {
						t.Fatalf("%s column %d: %g vs portable %g", what, j, got[j], want[j])
					}
				}
			}
			for r := range 4 {
				check(fmt.Sprint("4-row kernel, row ", r), simd[r], port[r])
			}
			check("1-row kernel", one, oneGo)
		})
	}
}

// TestPanelMulAddAllocs: a product allocates nothing, narrow tail included.
func TestPanelMulAddAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	p := PackPanels(false, 40, 100, randSlice(rng, 4000), 100)
	a := make([][]float32, 5)
	c := make([][]float32, 5)
	for i := range a {
		a[i], c[i] = randSlice(rng, 40), make([]float32, 100)
	}
	if n := testing.AllocsPerRun(50, func() { p.MulAdd(c, a) }); n != 0 {
		t.Errorf("MulAdd allocates %.1f times per call", n)
	}
}

// BenchmarkPanelMulAdd runs the products of a Silero VAD chunk on their
// own, each weight hot in cache: the LSTM cell (one row, 256 deep, 512
// wide) and the first encoder convolution (four frames, 3·129 deep, 128
// wide). GFLOP/s counts a multiply-add as two.
func BenchmarkPanelMulAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, bc := range []struct {
		name    string
		m, k, n int
	}{{"lstm", 1, 256, 512}, {"conv", 4, 387, 128}} {
		b.Run(bc.name, func(b *testing.B) {
			p := PackPanels(false, bc.k, bc.n, randSlice(rng, bc.k*bc.n), bc.n)
			a, c := make([][]float32, bc.m), make([][]float32, bc.m)
			for i := range a {
				a[i], c[i] = randSlice(rng, bc.k), make([]float32, bc.n)
			}
			cpu0 := procstat.CPUTime()
			for b.Loop() {
				p.MulAdd(c, a)
			}
			// CPU time, not wall: on a shared machine the wall time
			// includes waiting for a core.
			cpu := (procstat.CPUTime() - cpu0).Seconds()
			b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/op")
			b.ReportMetric(2*float64(bc.m*bc.k*bc.n)*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
		})
	}
}
