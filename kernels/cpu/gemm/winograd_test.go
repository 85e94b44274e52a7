package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tensorforge/forge/internal/procstat"
)

// winogradCases are stride-1 convolutions with a Winograd plan: the odd
// and edge shapes of convCases and Kokoro's generator shapes.
func winogradCases() []convCase {
	cases := []convCase{
		{1, 1, 3, 1, 1, 1, 1, 1, false},         // one output
		{5, 3, 3, 2, 1, 1, 2, 2, true},          // padding wider than the input
		{13, 7, 5, 40, 1, 1, 2, 2, true},        // rows past one panel
		{12, 9, 9, 300, 1, 2, 8, 8, false},      // dilation 2
		{130, 40, 3, 20, 1, 1, 1, 1, true},      // short, many rows
		{20, 400, 3, 150, 1, 1, 1, 1, false},    // deep: several depth blocks
		{128, 128, 11, 700, 1, 5, 25, 25, true}, // the generator's widest
		{128, 128, 7, 650, 1, 3, 9, 9, true},
		{128, 128, 3, 500, 1, 1, 1, 1, true},
		{256, 256, 7, 400, 1, 1, 3, 3, true},
		{64, 64, 11, 1001, 1, 1, 0, 0, false}, // no padding
		{33, 17, 3, 77, 1, 3, 0, 5, true},     // uneven padding
	}
	for _, c := range convCases() {
		if c.stride == 1 && WinogradTile(c.k) > 0 {
			cases = append(cases, c)
		}
	}
	return cases
}

// winogradTolerance is the relative L2 error allowed against the float64
// convolution for F(m, k), about ten times what 128 channels of Gaussian
// data measure (see winograd.go).
func winogradTolerance(k int) float64 {
	switch alpha := WinogradTile(k) + k - 1; {
	case alpha <= 8:
		return 1e-5
	case alpha <= 12:
		return 2e-4
	default:
		return 2e-3
	}
}

func TestWinogradMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range winogradCases() {
		w, x, bias := tc.operands(r)
		want, _ := refConv(tc, w, x, bias)
		lout := tc.lout()
		for name, e := range convEngines(t) {
			pw := e.PackWinograd(tc.cout, tc.cin, tc.k, w)
			// Input and output rows padded by 3 columns: the output's
			// padding must stay untouched.
			ldx, ldy := tc.l+3, lout+3
			xs := make([]float32, tc.cin*ldx)
			for ci := range tc.cin {
				copy(xs[ci*ldx:], x[ci*tc.l:(ci+1)*tc.l])
			}
			y := randSlice(r, tc.cout*ldy)
			y0 := append([]float32(nil), y...)
			s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: 1, Dilation: tc.dil, PadLeft: tc.padL, Lout: lout}
			e.WinogradConv1d(pw, s, xs, ldx, y, ldy, bias)
			var num, den float64
			for co := range tc.cout {
				for j := range ldy {
					got := y[co*ldy+j]
					if j >= lout {
						if math.Float32bits(got) != math.Float32bits(y0[co*ldy+j]) {
							t.Fatalf("%s %s: padding y[%d,%d] changed", name, tc, co, j)
						}
						continue
					}
					d := float64(got) - want[co*lout+j]
					num += d * d
					den += want[co*lout+j] * want[co*lout+j]
				}
			}
			rel := math.Sqrt(num / den)
			if !(rel <= winogradTolerance(tc.k)) {
				t.Errorf("%s %s: relative L2 error %.3g, want ≤ %.3g", name, tc, rel, winogradTolerance(tc.k))
			}
			if testing.Verbose() && name == "go-avx512/2t" {
				t.Logf("%s: relative L2 error %.3g", tc, rel)
			}
		}
	}
}

// TestWinogradFromWords: a weight mapped from another packing's words
// computes the same bits.
func TestWinogradFromWords(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	tc := convCase{cout: 30, cin: 20, k: 7, l: 500, stride: 1, dil: 3, padL: 9, padR: 9, bias: true}
	w, x, bias := randSlice(r, tc.cout*tc.cin*tc.k), randSlice(r, tc.cin*tc.l), randSlice(r, tc.cout)
	e := Default()
	pw := e.PackWinograd(tc.cout, tc.cin, tc.k, w)
	words := append([]byte(nil), pw.Words()...)
	kept, err := e.WinogradFrom(tc.cout, tc.cin, tc.k, words)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.WinogradFrom(tc.cout, tc.cin, tc.k, words[:len(words)-4]); err == nil {
		t.Error("WinogradFrom accepted words of the wrong length")
	}
	if _, err := e.WinogradFrom(tc.cout, tc.cin, 4, words); err == nil {
		t.Error("WinogradFrom accepted 4 taps, which have no plan")
	}
	s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: 1, Dilation: tc.dil, PadLeft: tc.padL, Lout: tc.lout()}
	a, b := make([]float32, tc.cout*tc.lout()), make([]float32, tc.cout*tc.lout())
	e.WinogradConv1d(pw, s, x, tc.l, a, tc.lout(), bias)
	e.WinogradConv1d(kept, s, x, tc.l, b, tc.lout(), bias)
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("output %d: %v from the mapped words, %v packed", i, b[i], a[i])
		}
	}
}

func TestWinogradBadArguments(t *testing.T) {
	e := Default()
	if e.PackWinograd(4, 4, 4, make([]float32, 64)) != nil {
		t.Error("PackWinograd packed 4 taps, which have no plan")
	}
	w := e.PackWinograd(4, 3, 3, make([]float32, 36))
	for _, tc := range []struct {
		name string
		s    Conv1dShape
	}{
		{"stride 2", Conv1dShape{Cin: 3, L: 10, K: 3, Stride: 2, Dilation: 1, Lout: 4}},
		{"wrong channels", Conv1dShape{Cin: 2, L: 10, K: 3, Stride: 1, Dilation: 1, Lout: 8}},
		{"wrong taps", Conv1dShape{Cin: 3, L: 10, K: 5, Stride: 1, Dilation: 1, Lout: 6}},
		{"zero dilation", Conv1dShape{Cin: 3, L: 10, K: 3, Stride: 1, Lout: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			e.WinogradConv1d(w, tc.s, make([]float32, 30), 10, make([]float32, 40), 10, nil)
		})
	}
}

// BenchmarkWinograd runs the generator's convolutions by Winograd next to
// BenchmarkConv1d's implicit GEMM, in the direct convolution's GFLOP/s
// (2·Cout·Cin·K·Lout per call), so the two rates compare as speeds.
func BenchmarkWinograd(b *testing.B) {
	e := Default()
	if os.Getenv("FORGE_BENCH_THREADS") == "1" {
		e, _ = NewGo(1, "")
	}
	for _, tc := range convBenchShapes {
		if WinogradTile(tc.k) == 0 {
			continue
		}
		r := rand.New(rand.NewPCG(1, 1))
		w, x, bias := randSlice(r, tc.cout*tc.cin*tc.k), randSlice(r, tc.cin*tc.l), randSlice(r, tc.cout)
		lout := tc.lout()
		y := make([]float32, tc.cout*lout)
		s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: 1, Dilation: tc.dil, PadLeft: tc.padL, Lout: lout}
		flops := 2 * float64(tc.cout*tc.cin*tc.k*lout)
		pw := e.PackConvWeight(tc.cout, tc.cin*tc.k, w, tc.cin*tc.k)
		ww := e.PackWinograd(tc.cout, tc.cin, tc.k, w)
		for _, v := range []struct {
			name string
			run  func()
		}{
			{"implicit", func() { e.Conv1d(pw, s, x, tc.l, y, lout, bias) }},
			{fmt.Sprintf("winograd-F%d", WinogradTile(tc.k)), func() { e.WinogradConv1d(ww, s, x, tc.l, y, lout, bias) }},
		} {
			b.Run(fmt.Sprintf("%s/%s", v.name, tc), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := procstat.CPUTime().Seconds()
				for b.Loop() {
					v.run()
				}
				reportRate(b, flops, cpu0, "GFLOP/s")
			})
		}
	}
}

// TestPhaseShuffles checks the window's deinterleave and the output's
// interleave (permutes up to 8 phases, transposes beyond) against their
// definitions, for every phase count Kokoro's dilations and tiles give
// and a few more.
func TestPhaseShuffles(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for S := 1; S <= 32; S++ {
		const wp, n = 48, 64
		x := randSlice(r, S*wp+40)
		rows := make([]float32, (S+16)*wp)
		if deinterleave(rows, x, S, wp) {
			for φ := range S {
				for c := range wp {
					if rows[φ*wp+c] != x[φ+S*c] {
						t.Fatalf("S=%d: deinterleaved row %d column %d = %v, want %v", S, φ, c, rows[φ*wp+c], x[φ+S*c])
					}
				}
			}
		}
		tp := randSlice(r, S*n)
		y := make([]float32, S*n-S*5) // not every block fits
		done := interleave(y, tp, S, n)
		if done > len(y) || done%(16*S) != 0 {
			t.Fatalf("S=%d: interleave set %d of %d", S, done, len(y))
		}
		for u := range done {
			if want := tp[(u%S)*n+u/S]; y[u] != want {
				t.Fatalf("S=%d: interleaved y[%d] = %v, want %v", S, u, y[u], want)
			}
		}
	}
}
