package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// bf16Case is one GemmBF16 product.
type bf16Case struct {
	m, n, k        int
	transA, transB bool
	pad            int // extra elements per row of A, B and C
	bias           bool
}

func (c bf16Case) String() string {
	return fmt.Sprintf("m%d_n%d_k%d_tA%v_tB%v_pad%d_bias%v", c.m, c.n, c.k, c.transA, c.transB, c.pad, c.bias)
}

// bf16Cases cover the pair kernels' tiles (4 and 12 rows, 4 and 32
// columns) and AMX's (32 × 32, 32 deep), odd depths (a pair with zero),
// several depth blocks (128 and 192 pair steps), column blocks (512) and
// row tasks, both layouts of each operand, and Whisper's shapes at a few
// hundred rows.
func bf16Cases() []bf16Case {
	return []bf16Case{
		{1, 1, 1, false, false, 0, false},
		{1, 7, 3, false, true, 1, true},        // one row
		{3, 5, 7, false, false, 0, true},       // odd everything, under one tile
		{13, 40, 37, false, true, 2, true},     // past one panel and sliver
		{12, 32, 32, false, false, 0, false},   // whole tiles
		{33, 33, 33, true, false, 1, true},     // transposed A, AMX edges
		{25, 70, 385, false, true, 0, true},    // two depth blocks, odd
		{40, 33, 1000, false, true, 3, false},  // deep: several blocks
		{100, 600, 130, false, false, 0, true}, // several column blocks
		{7, 1100, 64, true, true, 0, true},     // few rows, wide: row and column tasks
		{200, 1, 17, false, false, 0, true},    // one column
		{150, 384, 384, false, true, 0, true},  // Whisper tiny: q, out_proj
		{96, 1536, 384, false, true, 0, true},  // fc1
		{64, 384, 1536, false, true, 0, true},  // fc2
	}
}

// bf16Operands makes the case's A, B and bias (normal values) and their
// float64 products: want on the operands rounded to bfloat16 (with the
// magnitude Σ|a·b| + |bias|), exact on the float32 ones.
func bf16Operands(r *rand.Rand, c bf16Case) (a []float32, lda int, b []float32, ldb int, bias []float32, wantBF, magBF, want32, mag32 []float64) {
	ar, ac, br, bc := c.m, c.k, c.k, c.n
	if c.transA {
		ar, ac = c.k, c.m
	}
	if c.transB {
		br, bc = c.n, c.k
	}
	lda, ldb = ac+c.pad, bc+c.pad
	a, b = randSlice(r, ar*lda), randSlice(r, br*ldb)
	if c.bias {
		bias = randSlice(r, c.n)
	}
	at := func(i, p int) float32 {
		if c.transA {
			return a[p*lda+i]
		}
		return a[i*lda+p]
	}
	bt := func(p, j int) float32 {
		if c.transB {
			return b[j*ldb+p]
		}
		return b[p*ldb+j]
	}
	rnd := func(x float32) float64 { return float64(math.Float32frombits(uint32(toBF16(x)) << 16)) }
	wantBF, magBF = make([]float64, c.m*c.n), make([]float64, c.m*c.n)
	want32, mag32 = make([]float64, c.m*c.n), make([]float64, c.m*c.n)
	for i := 0; i < c.m; i++ {
		for j := 0; j < c.n; j++ {
			var s, sa, s32, sa32 float64
			if bias != nil {
				s, sa = float64(bias[j]), math.Abs(float64(bias[j]))
				s32, sa32 = s, sa
			}
			for p := 0; p < c.k; p++ {
				x, y := at(i, p), bt(p, j)
				v := rnd(x) * rnd(y)
				s, sa = s+v, sa+math.Abs(v)
				v = float64(x) * float64(y)
				s32, sa32 = s32+v, sa32+math.Abs(v)
			}
			wantBF[i*c.n+j], magBF[i*c.n+j] = s, sa
			want32[i*c.n+j], mag32[i*c.n+j] = s32, sa32
		}
	}
	return a, lda, b, ldb, bias, wantBF, magBF, want32, mag32
}

// bf16Packer packs a weight for one bfloat16 unit.
type bf16Packer struct {
	name string
	pack func(transB bool, k, n int, b []float32, ldb int) *BF16Weight
}

// bf16Packers lists every form GemmBF16 runs here: each pair kernel of
// this CPU (the portable one everywhere) and the AMX form, on the tile
// unit where the process may use it, else on amxRowsGo.
func bf16Packers() []bf16Packer {
	var ps []bf16Packer
	for _, pk := range bf16Kernels() {
		ps = append(ps, bf16Packer{pk.name, func(transB bool, k, n int, b []float32, ldb int) *BF16Weight {
			return packBF16Pairs(pk, transB, k, n, b, ldb)
		}})
	}
	tiles, name := tileFunc(amxRowsGo), "amx-emulated"
	if amxReady() {
		tiles, name = amxRows, "amx-bf16"
	}
	return append(ps, bf16Packer{name, func(transB bool, k, n int, b []float32, ldb int) *BF16Weight {
		return packBF16Tiles(tiles, transB, k, n, b, ldb)
	}})
}

// TestGemmBF16 runs every form on every case, on 1 to 3 threads, and
// checks C twice: against float64 on the operands rounded to bfloat16,
// within float32 summation error (compareSGEMM's (k+2)·2⁻²³·Σ|a·b|), and
// against the exact float32 product within 1.01·(2⁻⁷ + (k+2)·2⁻²³)·Σ|a·b|
// (each rounded operand is within 2⁻⁸ of itself, a product within about
// 2⁻⁷). The padding of C must stay as it was.
func TestGemmBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range bf16Cases() {
		a, lda, b, ldb, bias, wantBF, magBF, want32, mag32 := bf16Operands(r, tc)
		for _, p := range bf16Packers() {
			w := p.pack(tc.transB, tc.k, tc.n, b, ldb)
			for _, threads := range []int{1, 2, 3} {
				e, err := NewGo(threads, "")
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s/%dt %s", p.name, threads, tc)
				ldc := tc.n + tc.pad
				c := randSlice(r, tc.m*ldc)
				orig := append([]float32(nil), c...)
				e.GemmBF16(tc.transA, tc.m, a, lda, w, bias, c, ldc)
				compareSGEMM(t, name, c, orig, ldc, wantBF, magBF, tc.m, tc.n, tc.k)
				bound := 1.01 * (0x1p-7 + float64(tc.k+2)*0x1p-23)
				for i := 0; i < tc.m; i++ {
					for j := 0; j < tc.n; j++ {
						got, want := float64(c[i*ldc+j]), want32[i*tc.n+j]
						if d := math.Abs(got - want); !(d <= bound*mag32[i*tc.n+j]) {
							t.Fatalf("%s: C[%d,%d] = %v, float32 product %v: |diff| %.3g > %.3g", name, i, j, got, want, d, bound*mag32[i*tc.n+j])
						}
					}
				}
			}
		}
	}
}

// TestGemmBF16AssemblyMatchesGo runs each assembly pair kernel and the
// portable kernel blocked alike (the same pair steps per depth block) on
// the same operands: every sum then adds the same exact products (bfloat16
// products are exact in float32) in the same order, high product first,
// so C must agree bit for bit.
func TestGemmBF16AssemblyMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	asm := 0
	for _, pk := range bf16Kernels() {
		if pk == genericBF16Kernel {
			continue
		}
		asm++
		oracle := &bf16Kernel{name: genericBF16Kernel.name, mr: genericBF16Kernel.mr, nr: genericBF16Kernel.nr, kc: pk.kc, fn: genericBF16Kernel.fn}
		e, err := NewGo(2, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range bf16Cases() {
			a, lda, b, ldb, bias, _, _, _, _ := bf16Operands(r, tc)
			got, want := make([]float32, tc.m*tc.n), make([]float32, tc.m*tc.n)
			e.GemmBF16(tc.transA, tc.m, a, lda, packBF16Pairs(pk, tc.transB, tc.k, tc.n, b, ldb), bias, got, tc.n)
			e.GemmBF16(tc.transA, tc.m, a, lda, packBF16Pairs(oracle, tc.transB, tc.k, tc.n, b, ldb), bias, want, tc.n)
			for x := range got {
				if math.Float32bits(got[x]) != math.Float32bits(want[x]) {
					t.Fatalf("%s %s: C[%d,%d] = %v, portable kernel %v", pk.name, tc, x/tc.n, x%tc.n, got[x], want[x])
				}
			}
		}
	}
	if asm == 0 {
		t.Skip("no bfloat16 assembly kernel on this CPU")
	}
}

// amxRowsGo is amxConvRows (amx_amd64.s) in Go, with the same byte
// offsets and strides: the oracle for the AMX form's layouts on machines
// without AMX. For each of tpairs column pairs, C block (32×32, rows ldc
// bytes apart) = Σ over steps s of the A tiles at a + s·1024 (rows 0–15)
// and a + (steps+s)·1024 (rows 16–31) times the B tile rows at b + off[s]
// (bstride bytes apart, 32 columns of pair words); then b and c move 128
// bytes on.
func amxRowsGo(a *uint16, b *uint32, off *int, steps, bstride int, c *float32, ldc, tpairs int) {
	offs := unsafe.Slice(off, steps)
	for tp := 0; tp < tpairs; tp++ {
		var acc [32][32]float32
		for s := 0; s < steps; s++ {
			for r := 0; r < 32; r++ {
				arow := unsafe.Add(unsafe.Pointer(a), (r/16*steps+s)*1024+r%16*64)
				for kk := 0; kk < 16; kk++ {
					av := *(*uint32)(unsafe.Add(arow, 4*kk))
					brow := unsafe.Add(unsafe.Pointer(b), tp*128+offs[s]+kk*bstride)
					for n := 0; n < 32; n++ {
						bv := *(*uint32)(unsafe.Add(brow, 4*n))
						acc[r][n] += bfLo(av) * bfLo(bv)
						acc[r][n] += bfHi(av) * bfHi(bv)
					}
				}
			}
		}
		for r := range acc {
			for n, v := range acc[r] {
				*(*float32)(unsafe.Add(unsafe.Pointer(c), tp*128+r*ldc+4*n)) = v
			}
		}
	}
}

// TestPackBF16Path checks that PackBF16 follows the CPU: a weight exactly
// where BF16ConvPath names a unit, on that unit.
func TestPackBF16Path(t *testing.T) {
	e, err := NewGo(1, "")
	if err != nil {
		t.Fatal(err)
	}
	w := e.PackBF16(false, 5, 3, make([]float32, 15), 3)
	switch path := BF16ConvPath(); {
	case path == "" && w != nil:
		t.Fatalf("PackBF16 packed a weight (%s) on a machine without a bfloat16 unit", w.Path())
	case path != "" && (w == nil || w.Path() != path):
		t.Fatalf("BF16ConvPath %q but PackBF16 gave %v", path, w)
	case w != nil && (w.K() != 5 || w.N() != 3 || w.Bytes() == 0):
		t.Fatalf("weight reports k=%d n=%d, %d bytes", w.K(), w.N(), w.Bytes())
	}
}

func TestPairsOfMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, n := range []int{1, 2, 15, 16, 17, 33, 64, 385} {
		x := randSlice(r, n)
		x[0] = float32(math.Inf(1))
		x[n-1] = float32(math.NaN())
		got := make([]uint32, (n+1)/2)
		if kp := pairsOf(got, x); kp != len(got) {
			t.Fatalf("n=%d: pairsOf set %d pairs, want %d", n, kp, len(got))
		}
		for p := range got {
			want := uint32(toBF16(x[2*p]))
			if 2*p+1 < n {
				want |= uint32(toBF16(x[2*p+1])) << 16
			}
			if got[p] != want {
				t.Fatalf("n=%d: pair %d = %#x, want %#x", n, p, got[p], want)
			}
		}
	}
}

func TestGemmBF16AllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r := rand.New(rand.NewPCG(47, 48))
	const m, n, k = 150, 384, 384
	for _, p := range bf16Packers() {
		e, err := NewGo(2, "")
		if err != nil {
			t.Fatal(err)
		}
		a, b, bias, c := randSlice(r, m*k), randSlice(r, n*k), randSlice(r, n), make([]float32, m*n)
		w := p.pack(true, k, n, b, k)
		e.GemmBF16(false, m, a, k, w, bias, c, n)
		if allocs := testing.AllocsPerRun(20, func() { e.GemmBF16(false, m, a, k, w, bias, c, n) }); allocs != 0 {
			t.Errorf("%s: %v allocations per call", p.name, allocs)
		}
	}
}

func TestGemmBF16BadArgumentsPanic(t *testing.T) {
	e, err := NewGo(1, "")
	if err != nil {
		t.Fatal(err)
	}
	w := packBF16Pairs(genericBF16Kernel, false, 4, 3, make([]float32, 12), 3)
	for _, c := range []struct {
		name string
		call func()
		msg  string
	}{
		{"nil weight", func() { e.GemmBF16(false, 2, make([]float32, 8), 4, nil, nil, make([]float32, 6), 3) }, "nil weight"},
		{"negative m", func() { e.GemmBF16(false, -1, nil, 4, w, nil, nil, 3) }, "negative m"},
		{"short a", func() { e.GemmBF16(false, 2, make([]float32, 7), 4, w, nil, make([]float32, 6), 3) }, "len(a)"},
		{"short c", func() { e.GemmBF16(false, 2, make([]float32, 8), 4, w, nil, make([]float32, 5), 3) }, "len(c)"},
		{"small lda", func() { e.GemmBF16(false, 2, make([]float32, 8), 3, w, nil, make([]float32, 6), 3) }, "lda"},
		{"short bias", func() { e.GemmBF16(false, 2, make([]float32, 8), 4, w, make([]float32, 2), make([]float32, 6), 3) }, "len(bias)"},
		{"empty weight", func() { e.PackBF16(false, 0, 3, nil, 3) }, "0×3"},
		{"short weight", func() { e.PackBF16(true, 4, 3, make([]float32, 11), 4) }, "len(b)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), c.msg) {
					t.Fatalf("panic %v, want one naming %q", r, c.msg)
				}
			}()
			c.call()
		})
	}
}

// TestGemmBF16KernelsShareEngine runs a weight packed for the portable
// kernel and then one packed for each assembly kernel on one single-thread
// engine, with edge tiles: the worker's tile, sized by the first kernel,
// must be resized for the second (CI once panicked here when the two
// kernels happened to meet on one worker slot).
func TestGemmBF16KernelsShareEngine(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	tc := bf16Case{13, 40, 37, false, true, 0, true}
	asm := 0
	for _, pk := range bf16Kernels() {
		if pk == genericBF16Kernel {
			continue
		}
		asm++
		e, err := NewGo(1, "")
		if err != nil {
			t.Fatal(err)
		}
		oracle := &bf16Kernel{name: genericBF16Kernel.name, mr: genericBF16Kernel.mr, nr: genericBF16Kernel.nr, kc: pk.kc, fn: genericBF16Kernel.fn}
		a, lda, b, ldb, bias, _, _, _, _ := bf16Operands(r, tc)
		want, got := make([]float32, tc.m*tc.n), make([]float32, tc.m*tc.n)
		e.GemmBF16(tc.transA, tc.m, a, lda, packBF16Pairs(oracle, tc.transB, tc.k, tc.n, b, ldb), bias, want, tc.n)
		e.GemmBF16(tc.transA, tc.m, a, lda, packBF16Pairs(pk, tc.transB, tc.k, tc.n, b, ldb), bias, got, tc.n)
		for x := range got {
			if math.Float32bits(got[x]) != math.Float32bits(want[x]) {
				t.Fatalf("%s after the portable kernel: C[%d,%d] = %v, want %v", pk.name, x/tc.n, x%tc.n, got[x], want[x])
			}
		}
	}
	if asm == 0 {
		t.Skip("no bfloat16 assembly kernel on this CPU")
	}
}
