package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// convCase is one convolution: the weight is Cout×(Cin·K).
type convCase struct {
	cout, cin, k            int
	l                       int
	stride, dil, padL, padR int
	bias                    bool
}

func (c convCase) String() string {
	return fmt.Sprintf("cout%d_cin%d_k%d_l%d_s%d_d%d_p%d,%d_bias%v", c.cout, c.cin, c.k, c.l, c.stride, c.dil, c.padL, c.padR, c.bias)
}

func (c convCase) lout() int {
	span := c.dil*(c.k-1) + 1
	return (c.l+c.padL+c.padR-span)/c.stride + 1
}

func convCases() []convCase {
	return []convCase{
		{1, 1, 1, 1, 1, 1, 0, 0, false},        // tiny
		{3, 2, 3, 5, 1, 1, 1, 1, true},         // odd, shorter than a sliver
		{13, 7, 3, 40, 1, 1, 1, 1, true},       // rows past one panel
		{12, 5, 7, 33, 1, 3, 9, 9, false},      // dilation, one row panel
		{25, 9, 11, 100, 1, 5, 25, 25, true},   // Kokoro's widest tap reach
		{8, 4, 5, 30, 1, 1, 0, 0, false},       // no padding
		{9, 6, 4, 50, 1, 2, 5, 1, true},        // even kernel, uneven padding
		{10, 3, 3, 64, 2, 1, 1, 1, true},       // stride 2
		{7, 22, 12, 301, 6, 1, 3, 3, true},     // noise_convs.0: stride 6, K 12
		{5, 4, 7, 61, 3, 2, 4, 0, false},       // stride and dilation
		{6, 3, 1, 70, 1, 1, 0, 0, true},        // 1×1
		{6, 3, 2, 9, 1, 4, 6, 6, false},        // padding wider than the input
		{40, 30, 3, 600, 1, 1, 1, 1, true},     // several column blocks
		{20, 130, 3, 150, 1, 1, 1, 1, false},   // deep: several depth blocks
		{36, 64, 11, 1100, 1, 5, 25, 25, true}, // long, dilated
		{130, 40, 3, 2, 1, 1, 1, 1, true},      // short L: row tasks
		{33, 100, 3, 37, 1, 1, 1, 1, true},     // deep and short
		{16, 16, 3, 1000, 1, 1, 0, 0, false},   // Lout = L − 2
	}
}

// operands returns a random weight, input and (where the case has one)
// bias for c.
func (c convCase) operands(r *rand.Rand) (w, x, bias []float32) {
	w, x = randSlice(r, c.cout*c.cin*c.k), randSlice(r, c.cin*c.l)
	if c.bias {
		bias = randSlice(r, c.cout)
	}
	return w, x, bias
}

// refConv computes the convolution in float64 and the magnitude bound
// Σ|w·x| + |bias| for each output.
func refConv(c convCase, w, x, bias []float32) (want, mag []float64) {
	lout := c.lout()
	want, mag = make([]float64, c.cout*lout), make([]float64, c.cout*lout)
	for co := 0; co < c.cout; co++ {
		for t := 0; t < lout; t++ {
			var s, sa float64
			if bias != nil {
				s, sa = float64(bias[co]), math.Abs(float64(bias[co]))
			}
			for ci := 0; ci < c.cin; ci++ {
				for k := 0; k < c.k; k++ {
					i := t*c.stride + k*c.dil - c.padL
					if i < 0 || i >= c.l {
						continue
					}
					p := float64(w[(co*c.cin+ci)*c.k+k]) * float64(x[ci*c.l+i])
					s += p
					sa += math.Abs(p)
				}
			}
			want[co*lout+t], mag[co*lout+t] = s, sa
		}
	}
	return want, mag
}

func convEngines(t testing.TB) map[string]*Engine {
	es := map[string]*Engine{}
	for _, name := range GoKernels() {
		for _, threads := range []int{1, 2, 3} {
			e, err := NewGo(threads, name)
			if err != nil {
				t.Fatal(err)
			}
			es[fmt.Sprintf("%s/%dt", name, threads)] = e
		}
	}
	if e, err := LoadBLAS(2); err == nil {
		es["blas"] = e // convolutions still run the Go kernel
	}
	return es
}

func TestConv1dMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range convCases() {
		w, x, bias := tc.operands(r)
		want, mag := refConv(tc, w, x, bias)
		lout := tc.lout()
		for name, e := range convEngines(t) {
			pw := e.PackConvWeight(tc.cout, tc.cin*tc.k, w, tc.cin*tc.k)
			// Output rows padded by 3 columns that must stay untouched.
			ldy := lout + 3
			y := randSlice(r, tc.cout*ldy)
			y0 := append([]float32(nil), y...)
			s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: tc.stride, Dilation: tc.dil, PadLeft: tc.padL, Lout: lout}
			e.Conv1d(pw, s, x, tc.l, y, ldy, bias)
			compareSGEMM(t, name+" "+tc.String(), y, y0, ldy, want, mag, tc.cout, lout, tc.cin*tc.k)
		}
	}
}

// TestConv1dStridedInput reads x with a row stride larger than L and
// writes y with one larger than Lout (views into bigger tensors).
func TestConv1dStridedInput(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	tc := convCase{cout: 14, cin: 5, k: 3, l: 77, stride: 1, dil: 2, padL: 2, padR: 2, bias: true}
	w, bias := randSlice(r, tc.cout*tc.cin*tc.k), randSlice(r, tc.cout)
	const ldx = 90
	xs := randSlice(r, tc.cin*ldx)
	x := make([]float32, tc.cin*tc.l)
	for ci := 0; ci < tc.cin; ci++ {
		copy(x[ci*tc.l:(ci+1)*tc.l], xs[ci*ldx:])
	}
	want, mag := refConv(tc, w, x, bias)
	e, err := NewGo(2, "")
	if err != nil {
		t.Fatal(err)
	}
	lout := tc.lout()
	y := make([]float32, tc.cout*(lout+5))
	y0 := append([]float32(nil), y...)
	e.Conv1d(e.PackConvWeight(tc.cout, tc.cin*tc.k, w, tc.cin*tc.k), Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: 1, Dilation: 2, PadLeft: 2, Lout: lout}, xs[:(tc.cin-1)*ldx+tc.l], ldx, y, lout+5, bias)
	compareSGEMM(t, "strided", y, y0, lout+5, want, mag, tc.cout, lout, tc.cin*tc.k)
}

// TestOffsetKernelsMatchGo checks each assembly offset kernel against the
// portable one on scattered offsets, with and without beta.
func TestOffsetKernelsMatchGo(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, kern := range sgemmKernels() {
		if kern.offFn == nil {
			continue
		}
		const k = 37
		a := randSlice(r, kern.mr*k)
		b := randSlice(r, 4000)
		off := make([]int, k)
		for p := range off {
			off[p] = r.IntN(4000 - kern.nr)
		}
		for _, beta := range []float32{0, 1, 0.5} {
			c := randSlice(r, kern.mr*kern.nr)
			want := make([]float64, len(c))
			for i := 0; i < kern.mr; i++ {
				for j := 0; j < kern.nr; j++ {
					var s float64
					for p := 0; p < k; p++ {
						s += float64(a[p*kern.mr+i]) * float64(b[off[p]+j])
					}
					want[i*kern.nr+j] = s + float64(beta)*float64(c[i*kern.nr+j])
				}
			}
			kern.offFn(k, &a[0], &b[0], &off[0], &c[0], kern.nr, beta)
			for x := range c {
				if d := math.Abs(float64(c[x]) - want[x]); d > 1e-4*(1+math.Abs(want[x])) {
					t.Fatalf("%s beta %v: c[%d] = %v, want %v", kern.name, beta, x, c[x], want[x])
				}
			}
		}
	}
}

func TestConv1dAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops entries under the race detector; run without -race")
	}
	r := rand.New(rand.NewPCG(17, 18))
	tc := convCase{cout: 64, cin: 64, k: 7, l: 3000, stride: 1, dil: 3, padL: 9, padR: 9, bias: true}
	w, x, bias := randSlice(r, tc.cout*tc.cin*tc.k), randSlice(r, tc.cin*tc.l), randSlice(r, tc.cout)
	y := make([]float32, tc.cout*tc.lout())
	s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: 1, Dilation: tc.dil, PadLeft: tc.padL, Lout: tc.lout()}
	for _, name := range GoKernels() {
		e, err := NewGo(2, name)
		if err != nil {
			t.Fatal(err)
		}
		pw := e.PackConvWeight(tc.cout, tc.cin*tc.k, w, tc.cin*tc.k)
		e.Conv1d(pw, s, x, tc.l, y, tc.lout(), bias)
		if allocs := testing.AllocsPerRun(10, func() { e.Conv1d(pw, s, x, tc.l, y, tc.lout(), bias) }); allocs >= 1 {
			t.Errorf("%s: %.1f allocations per Conv1d, want 0", name, allocs)
		}
		if bw := e.PackConvWeightBF16(tc.cout, tc.cin, tc.k, w); bw != nil {
			e.Conv1d(bw, s, x, tc.l, y, tc.lout(), bias)
			if allocs := testing.AllocsPerRun(10, func() { e.Conv1d(bw, s, x, tc.l, y, tc.lout(), bias) }); allocs >= 1 {
				t.Errorf("%s: %.1f allocations per bfloat16 Conv1d, want 0", name, allocs)
			}
		}
		ww := e.PackWinograd(tc.cout, tc.cin, tc.k, w)
		e.WinogradConv1d(ww, s, x, tc.l, y, tc.lout(), bias)
		if allocs := testing.AllocsPerRun(10, func() { e.WinogradConv1d(ww, s, x, tc.l, y, tc.lout(), bias) }); allocs >= 1 {
			t.Errorf("%s: %.1f allocations per WinogradConv1d, want 0", name, allocs)
		}
	}
}

func TestConv1dBadArgumentsPanic(t *testing.T) {
	e, err := NewGo(1, "")
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float32, 4*6)
	pw := e.PackConvWeight(4, 6, w, 6)
	x, y := make([]float32, 2*10), make([]float32, 4*10)
	ok := Conv1dShape{Cin: 2, L: 10, K: 3, Stride: 1, Dilation: 1, PadLeft: 1, Lout: 10}
	cases := []struct {
		name, want string
		call       func()
	}{
		{"depth", "weight depth 6", func() { s := ok; s.K = 2; e.Conv1d(pw, s, x, 10, y, 10, nil) }},
		{"stride", "invalid shape", func() { s := ok; s.Stride = 0; e.Conv1d(pw, s, x, 10, y, 10, nil) }},
		{"short x", "len(x)", func() { e.Conv1d(pw, ok, x[:15], 10, y, 10, nil) }},
		{"short y", "len(y)", func() { e.Conv1d(pw, ok, x, 10, y[:39], 10, nil) }},
		{"short bias", "len(bias)", func() { e.Conv1d(pw, ok, x, 10, y, 10, make([]float32, 3)) }},
		{"ldx", "ldx", func() { e.Conv1d(pw, ok, x, 9, y, 10, nil) }},
		{"weight", "PackConvWeight", func() { e.PackConvWeight(0, 6, w, 6) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Fatalf("panic %v, want one mentioning %q", r, tc.want)
				}
			}()
			tc.call()
		})
	}
}

// roundBF16 returns x rounded to bfloat16 (as float32 values).
func roundBF16(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = math.Float32frombits(uint32(toBF16(v)) << 16)
	}
	return y
}

// bf16ConvCases are convCases with two of Kokoro's shapes at a smaller
// length: 128 channels of 11 dilated taps, and 22 channels (odd pair
// count for AMX blocks) of one tap.
func bf16ConvCases() []convCase {
	return append(convCases(), convCase{128, 128, 11, 700, 1, 5, 25, 25, true}, convCase{64, 22, 1, 333, 1, 1, 0, 0, true})
}

// TestConv1dBF16 checks the machine's bfloat16 path (BF16ConvPath: AMX
// tiles or VDPBF16PS) against float64 on the same operands rounded to
// bfloat16: the only error left is float32 accumulation.
func TestConv1dBF16(t *testing.T) {
	path := BF16ConvPath()
	if path == "" {
		t.Skip("no AMX-BF16 (or the OS withholds it) and no AVX512_BF16 on this machine: nothing to test")
	}
	r := rand.New(rand.NewPCG(19, 20))
	round := roundBF16
	for _, tc := range bf16ConvCases() {
		w := randSlice(r, tc.cout*tc.cin*tc.k)
		x := randSlice(r, tc.cin*tc.l)
		var bias []float32
		if tc.bias {
			bias = randSlice(r, tc.cout)
		}
		want, mag := refConv(tc, round(w), round(x), bias)
		lout := tc.lout()
		for _, threads := range []int{1, 2, 3} {
			e, err := NewGo(threads, "")
			if err != nil {
				t.Fatal(err)
			}
			pw := e.PackConvWeightBF16(tc.cout, tc.cin, tc.k, w)
			if pw == nil || !pw.BF16() {
				t.Fatalf("PackConvWeightBF16 gave no bfloat16 weight where BF16ConvPath is %q", path)
			}
			ldy := lout + 3
			y := randSlice(r, tc.cout*ldy)
			y0 := append([]float32(nil), y...)
			s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: tc.stride, Dilation: tc.dil, PadLeft: tc.padL, Lout: lout}
			e.Conv1d(pw, s, x, tc.l, y, ldy, bias)
			compareSGEMM(t, fmt.Sprintf("%s/%dt %s", path, threads, tc), y, y0, ldy, want, mag, tc.cout, lout, tc.cin*tc.k)
		}
	}
}

func TestBF16PairsMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{1, 15, 16, 17, 40, 64} {
		x0, x1 := randSlice(r, n), randSlice(r, n)
		x0[0] = float32(math.Inf(-1))
		x1[n-1] = float32(math.NaN())
		got := make([]uint32, n)
		pairBF16(got, x0, x1)
		for i := range got {
			want := uint32(toBF16(x0[i])) | uint32(toBF16(x1[i]))<<16
			if got[i] != want {
				t.Fatalf("n=%d: pair %d = %#x, want %#x", n, i, got[i], want)
			}
		}
	}
}

// TestConv1dBF16Pairs runs every pair kernel this CPU has (the portable
// one everywhere) through Conv1d and checks it twice: against float64 on
// the operands rounded to bfloat16, within float32 accumulation error
// (compareSGEMM's (depth+2)·2⁻²³·Σ|w·x|), and against the exact float32
// product, within 1.01·(2⁻⁷ + (depth+2)·2⁻²³)·Σ|w·x|: bfloat16 has 8
// significant bits, so each operand rounded to nearest is off by at most
// 2⁻⁸ of itself, and each product by 2⁻⁷ (and 2⁻¹⁶).
func TestConv1dBF16Pairs(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, tc := range bf16ConvCases() {
		w := randSlice(r, tc.cout*tc.cin*tc.k)
		x := randSlice(r, tc.cin*tc.l)
		var bias []float32
		if tc.bias {
			bias = randSlice(r, tc.cout)
		}
		wantBF, magBF := refConv(tc, roundBF16(w), roundBF16(x), bias)
		want32, mag32 := refConv(tc, w, x, bias)
		lout, depth := tc.lout(), tc.cin*tc.k
		for _, pk := range bf16Kernels() {
			for _, threads := range []int{1, 2, 3} {
				e, err := NewGo(threads, "")
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s/%dt %s", pk.name, threads, tc)
				pw := e.packConvWeightPairs(pk, tc.cout, tc.cin, tc.k, w)
				ldy := lout + 3
				y := randSlice(r, tc.cout*ldy)
				y0 := append([]float32(nil), y...)
				s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: tc.stride, Dilation: tc.dil, PadLeft: tc.padL, Lout: lout}
				e.Conv1d(pw, s, x, tc.l, y, ldy, bias)
				compareSGEMM(t, name, y, y0, ldy, wantBF, magBF, tc.cout, lout, depth)
				bound := 1.01 * (0x1p-7 + float64(depth+2)*0x1p-23)
				for co := 0; co < tc.cout; co++ {
					for j := 0; j < lout; j++ {
						got, want := float64(y[co*ldy+j]), want32[co*lout+j]
						if d := math.Abs(got - want); !(d <= bound*mag32[co*lout+j]) {
							t.Fatalf("%s: y[%d,%d] = %v, float32 product %v: |diff| %.3g > %.3g", name, co, j, got, want, d, bound*mag32[co*lout+j])
						}
					}
				}
			}
		}
	}
}

// packPairsScalar is packConvWeightPairs as first written, on one
// thread: the oracle of the parallel packer's split into tasks.
func packPairsScalar(pk *bf16Kernel, cout, cin, k int, w []float32, kc int) []uint32 {
	steps := roundUp(cin, 2) / 2 * k
	panels := ceilDiv(cout, pk.mr)
	pairs := make([]uint32, panels*pk.mr*steps)
	for pc := 0; pc < steps; pc += kc {
		d := min(kc, steps-pc)
		blk := pairs[pc*panels*pk.mr:]
		for ir := 0; ir < panels; ir++ {
			pan := blk[ir*pk.mr*d : (ir+1)*pk.mr*d]
			for i := 0; i < pk.mr && ir*pk.mr+i < cout; i++ {
				row := w[(ir*pk.mr+i)*cin*k:][:cin*k]
				for p := 0; p < d; p++ {
					c, tap := (pc+p)/k, (pc+p)%k
					v := uint32(toBF16(row[2*c*k+tap]))
					if 2*c+1 < cin {
						v |= uint32(toBF16(row[(2*c+1)*k+tap])) << 16
					}
					pan[p*pk.mr+i] = v
				}
			}
		}
	}
	return pairs
}

// TestPackPairsMatchesScalar checks the packer, on 1 to 3 threads, bit
// for bit against the one-thread oracle: odd channel counts, rows past the
// last panel, several depth blocks, values that round up, ties and NaN.
func TestPackPairsMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	tests := []struct{ cout, cin, k int }{
		{1, 1, 1}, {5, 3, 3}, {13, 7, 11}, {64, 64, 3}, {100, 257, 7}, {256, 512, 3}, {40, 600, 1},
	}
	for _, pk := range bf16Kernels() {
		for _, tc := range tests {
			w := randSlice(r, tc.cout*tc.cin*tc.k)
			for i := 0; i < len(w); i += 7 {
				w[i] = math.Float32frombits(math.Float32bits(w[i])&^0xFFFF | 0x8000) // a tie
			}
			w[len(w)/2] = float32(math.NaN())
			for _, threads := range []int{1, 2, 3} {
				e, err := NewGo(threads, "")
				if err != nil {
					t.Fatal(err)
				}
				cw := e.packConvWeightPairs(pk, tc.cout, tc.cin, tc.k, w)
				want := packPairsScalar(pk, tc.cout, tc.cin, tc.k, w, cw.kc)
				if len(cw.pairs) != len(want) {
					t.Fatalf("%s %v: %d words, want %d", pk.name, tc, len(cw.pairs), len(want))
				}
				for i := range want {
					if cw.pairs[i] != want[i] {
						t.Fatalf("%s %v %d threads: word %d = %#x, want %#x", pk.name, tc, threads, i, cw.pairs[i], want[i])
					}
				}
			}
		}
	}
}

// TestPairKernelsMatchFloat64 checks each pair kernel alone on scattered
// offsets, with and without beta, against float64 sums of the widened
// pairs (bfloat16 products are exact in float32).
func TestPairKernelsMatchFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	pair := func() uint32 {
		return uint32(toBF16(float32(r.NormFloat64()))) | uint32(toBF16(float32(r.NormFloat64())))<<16
	}
	for _, pk := range bf16Kernels() {
		const k, nb = 37, 4000
		a := make([]uint32, pk.mr*k)
		b := make([]uint32, nb)
		for i := range a {
			a[i] = pair()
		}
		for i := range b {
			b[i] = pair()
		}
		off := make([]int, k)
		for p := range off {
			off[p] = r.IntN(nb - pk.nr)
		}
		for _, beta := range []float32{0, 1, 0.5} {
			c := randSlice(r, pk.mr*pk.nr)
			want, mag := make([]float64, len(c)), make([]float64, len(c))
			for i := 0; i < pk.mr; i++ {
				for j := 0; j < pk.nr; j++ {
					var s, sa float64
					for p := 0; p < k; p++ {
						av, bv := a[p*pk.mr+i], b[off[p]+j]
						for _, v := range []float64{float64(bfLo(av)) * float64(bfLo(bv)), float64(bfHi(av)) * float64(bfHi(bv))} {
							s += v
							sa += math.Abs(v)
						}
					}
					cv := float64(beta) * float64(c[i*pk.nr+j])
					want[i*pk.nr+j], mag[i*pk.nr+j] = s+cv, sa+math.Abs(cv)
				}
			}
			pk.fn(k, &a[0], &b[0], &off[0], &c[0], pk.nr, beta)
			for x := range c {
				if d := math.Abs(float64(c[x]) - want[x]); !(d <= float64(2*k+3)*0x1p-23*mag[x]) {
					t.Fatalf("%s beta %v: c[%d] = %v, want %v", pk.name, beta, x, c[x], want[x])
				}
			}
		}
	}
}

// TestBF16ConvPath checks that the bfloat16 path follows the CPU: a
// bfloat16 weight exactly where BF16ConvPath names a unit, and the pair
// kernel where that unit is AVX512_BF16.
func TestBF16ConvPath(t *testing.T) {
	e, err := NewGo(1, "")
	if err != nil {
		t.Fatal(err)
	}
	path := BF16ConvPath()
	pw := e.PackConvWeightBF16(3, 5, 2, make([]float32, 30))
	switch {
	case path == "":
		if pw != nil {
			t.Fatal("PackConvWeightBF16 packed a weight on a machine without a bfloat16 unit")
		}
	case pw == nil || !pw.BF16():
		t.Fatalf("BF16ConvPath %q but PackConvWeightBF16 gave no bfloat16 weight", path)
	case (path == "amx-bf16") != (pw.bf != nil) || (pw.pk != nil && pw.pk.name != path):
		t.Fatalf("BF16ConvPath %q but the weight is packed for AMX: %v, pair kernel %v", path, pw.bf != nil, pw.pk)
	}
	if path == "" && HasBF16Conv() || path != "" && !HasBF16Conv() {
		t.Fatalf("HasBF16Conv %v disagrees with BF16ConvPath %q", HasBF16Conv(), path)
	}
}

// TestBalancedBlock checks the convolution's column blocks with several
// workers: Kokoro's 700- and 4201-frame generator convolutions and
// Whisper's 3000 frames split into a multiple of the workers, every block
// a multiple of the sliver width and at most convCols wide, and one worker
// (or a single sliver) left to the default split.
func TestBalancedBlock(t *testing.T) {
	for _, tc := range []struct {
		lout, nr, workers, want int
	}{
		{700, 32, 2, 192},
		{4201, 32, 2, 192},
		{3000, 32, 2, 256},
		{858, 32, 2, 224},
		{35, 32, 2, 32},
		{700, 32, 1, 0},
		{3, 32, 2, 0},
	} {
		if got := balancedBlock(tc.lout, tc.nr, tc.workers); got != tc.want {
			t.Errorf("balancedBlock(%d, %d, %d) = %d, want %d", tc.lout, tc.nr, tc.workers, got, tc.want)
		}
	}
	for _, nr := range []int{16, 32} {
		for _, workers := range []int{2, 3, 4} {
			for lout := 1; lout <= 5000; lout++ {
				b := balancedBlock(lout, nr, workers)
				if b == 0 {
					continue
				}
				if b%nr != 0 || b > convCols || ceilDiv(lout, b)%workers != 0 {
					t.Fatalf("balancedBlock(%d, %d, %d) = %d: %d blocks", lout, nr, workers, b, ceilDiv(lout, b))
				}
			}
		}
	}
}
