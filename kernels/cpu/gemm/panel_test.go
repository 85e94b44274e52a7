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
		relu     bool
		describe string
	}{
		{1, 1, 1, false, 0, false, "smallest"},
		{1, 256, 512, true, 0, false, "LSTM cell, one stream"},
		{1, 255, 64, false, 0, true, "odd depth, one row, ReLU"},
		{4, 387, 128, true, 129, true, "3-tap convolution, stride 1, ReLU"},
		{2, 384, 64, true, 256, true, "3-tap convolution, stride 2, ReLU"},
		{3, 100, 70, false, 0, true, "three rows, tail 6, ReLU"},
		{4, 256, 258, false, 128, false, "STFT frames at hop 128, tail panel of 2"},
		{7, 64, 100, false, 0, false, "four-row block and three rows, tail 36"},
		{6, 64, 100, false, 0, true, "four-row block and two rows, tail 36, ReLU"},
		{9, 129, 65, true, 0, false, "tail panel of 1"},
		{64, 256, 512, true, 0, false, "LSTM cell, 64 streams"},
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
					if tc.relu {
						want[i][j] = max(want[i][j], 0)
					}
				}
			}
			if tc.relu {
				p.MulAddReLU(c, a)
			} else {
				p.MulAdd(c, a)
			}
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

// TestPanelKernelsAgree: the portable kernel and the SIMD ones give the
// same sums (up to rounding order) on the same panel, for each row count
// and with and without the ReLU.
func TestPanelKernelsAgree(t *testing.T) {
	if PanelPath() == "go" {
		t.Skip("only the portable panel kernel runs on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range []int{1, 2, 4} {
		for _, k := range []int{1, 2, 3, 64, 65, 128, 129, 387} { // around the depth blocks
			for _, relu := range []bool{false, true} {
				t.Run(fmt.Sprintf("rows=%d/k=%d/relu=%v", m, k, relu), func(t *testing.T) {
					b := randSlice(rng, k*PanelWidth)
					a := make([][]float32, m)
					var simd, port [4][]float32
					var cs, cp [4]*float32
					for r := range m {
						a[r] = randSlice(rng, k)
						simd[r] = randSlice(rng, PanelWidth)
						port[r] = append([]float32(nil), simd[r]...)
						cs[r], cp[r] = &simd[r][0], &port[r][0]
					}
					panelRows(m, k, b, a, &cs, relu)
					panelGo(m, k, b, a, &cp, relu)
					for r := range m {
						for j := range simd[r] {
							if d := math.Abs(float64(simd[r][j] - port[r][j])); !(d <= 1e-5*float64(k)) {
								t.Fatalf("row %d column %d: %g vs portable %g", r, j, simd[r][j], port[r][j])
							}
							if relu && simd[r][j] < 0 {
								t.Fatalf("row %d column %d: %g after the ReLU", r, j, simd[r][j])
							}
						}
					}
				})
			}
		}
	}
}

// TestPanelMulAddBlockedSums: over a depth longer than panelDepth the
// products are summed in blocks, so a long sum of same-signed terms
// (rounding against a large running total) lands closer to the exact sum
// than one chain of fused multiply-adds over the whole depth started from
// C, which is what the kernels computed before.
func TestPanelMulAddBlockedSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		m, k  int
		start float32 // C before the product, as a bias
	}{{1, 1024, 0}, {2, 384, 100}, {4, 387, 100}} {
		t.Run(fmt.Sprintf("rows=%d/k=%d", tc.m, tc.k), func(t *testing.T) {
			b := make([]float32, tc.k*PanelWidth)
			for i := range b {
				b[i] = rng.Float32()
			}
			p := PackPanels(false, tc.k, PanelWidth, b, PanelWidth)
			a := make([][]float32, tc.m)
			c := make([][]float32, tc.m)
			for r := range a {
				a[r] = make([]float32, tc.k)
				for d := range a[r] {
					a[r][d] = rng.Float32()
				}
				c[r] = make([]float32, PanelWidth)
				for j := range c[r] {
					c[r][j] = tc.start
				}
			}
			p.MulAdd(c, a)
			var eb, ec float64
			for r := range a {
				for j := range PanelWidth {
					want := float64(tc.start)
					chain := tc.start
					for d := range tc.k {
						ab := float64(a[r][d]) * float64(b[d*PanelWidth+j]) // exact
						want += ab
						chain = float32(float64(chain) + ab) // one rounding, as an FMA
					}
					eb += math.Abs(float64(c[r][j]) - want)
					ec += math.Abs(float64(chain) - want)
				}
			}
			n := float64(tc.m * PanelWidth)
			t.Logf("mean |error|: blocked %.3g, one chain %.3g", eb/n, ec/n)
			if !(eb < 0.5*ec) {
				t.Errorf("blocked sums are off by %.3g on average, not under half of one chain's %.3g", eb/n, ec/n)
			}
		})
	}
}

// TestPanelMulAddAllocs: a product allocates nothing, narrow tail included.
func TestPanelMulAddAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{40, 3*panelDepth + 1} { // one depth block, four
		p := PackPanels(false, k, 100, randSlice(rng, k*100), 100)
		for _, m := range []int{1, 2, 3, 4, 5} {
			a := make([][]float32, m)
			c := make([][]float32, m)
			for i := range a {
				a[i], c[i] = randSlice(rng, k), make([]float32, 100)
			}
			if n := testing.AllocsPerRun(50, func() { p.MulAddReLU(c, a) }); n != 0 {
				t.Errorf("MulAddReLU of %d rows, depth %d, allocates %.1f times per call", m, k, n)
			}
		}
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
