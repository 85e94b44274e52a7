package gemm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tensorforge/forge/internal/procstat"
)

// reportRate reports ops per wall-clock second under unit, and per
// CPU-second (all of the process's threads, BLAS threads included) under
// unit+"/cpu-s" when the CPU clock is available.
func reportRate(b *testing.B, ops float64, cpu0 float64, unit string) {
	b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds()/1e9, unit)
	if cpu := procstat.CPUTime().Seconds() - cpu0; cpu0 > 0 && cpu > 0 {
		b.ReportMetric(ops*float64(b.N)/cpu/1e9, unit+"/cpu-s")
	}
}

// benchShapes are m×n×k: the 384×1500×384 and 1024³, plus Whisper's
// encoder MLP as the graph will call it (activations [1500, 384] times a
// PyTorch-layout weight [1536, 384], transposed).
var benchShapes = []struct {
	m, n, k int
	transB  bool
}{
	{384, 1500, 384, false},
	{1024, 1024, 1024, false},
	{1500, 1536, 384, true},
}

// BenchmarkSGEMM reports GFLOP/s for every path (the system BLAS through
// purego, and each Go kernel) on GOMAXPROCS threads.
func BenchmarkSGEMM(b *testing.B) {
	engines := map[string]*Engine{}
	if e, err := LoadBLAS(0); err == nil {
		engines[e.blas.kind] = e
	} else {
		b.Logf("no BLAS: %v", err)
	}
	for _, name := range GoKernels() {
		e, err := NewGo(0, name)
		if err != nil {
			b.Fatal(err)
		}
		engines[name] = e
	}
	for _, s := range benchShapes {
		r := rand.New(rand.NewPCG(1, 1))
		x := randSlice(r, s.m*s.k)
		w := randSlice(r, s.k*s.n)
		c := make([]float32, s.m*s.n)
		ldb := s.n
		if s.transB {
			ldb = s.k
		}
		for name, e := range engines {
			if name == "go" && s.m*s.n*s.k > 1<<28 {
				continue // the portable kernel takes seconds here
			}
			b.Run(fmt.Sprintf("%s/%dx%dx%d", name, s.m, s.n, s.k), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := procstat.CPUTime().Seconds()
				for b.Loop() {
					e.SGEMM(false, s.transB, s.m, s.n, s.k, 1, x, s.k, w, ldb, 0, c, s.n)
				}
				reportRate(b, 2*float64(s.m*s.n*s.k), cpu0, "GFLOP/s")
			})
		}
	}
}

// BenchmarkGemmU8 reports integer GOP/s (2 ops per multiply-add) for the
// int8 path at Whisper's encoder shapes, with B prepacked as at load time.
func BenchmarkGemmU8(b *testing.B) {
	shapes := [][3]int{{1500, 384, 384}, {1500, 1536, 384}, {1500, 384, 1536}}
	for _, k := range igemmKernels() {
		e, err := NewGo(0, "")
		if err != nil {
			b.Fatal(err)
		}
		e.ikern = k
		for _, s := range shapes {
			m, n, kk := s[0], s[1], s[2]
			r := rand.New(rand.NewPCG(2, 2))
			a := make([]uint8, m*kk)
			w := make([]uint8, n*kk)
			for i := range a {
				a[i] = uint8(r.IntN(256))
			}
			for i := range w {
				w[i] = uint8(r.IntN(256))
			}
			qb := PackU8(true, kk, n, w, kk, []uint8{131})
			c := make([]int32, m*n)
			if k.name == "go" && m*n*kk > 1<<28 {
				continue
			}
			b.Run(fmt.Sprintf("%s/%dx%dx%d", k.name, m, n, kk), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := procstat.CPUTime().Seconds()
				for b.Loop() {
					e.GemmU8(m, a, kk, 117, qb, c, n)
				}
				reportRate(b, 2*float64(m*n*kk), cpu0, "GOP/s")
			})
			b.Run(fmt.Sprintf("%s-oneshot/%dx%dx%d", k.name, m, n, kk), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := procstat.CPUTime().Seconds()
				for b.Loop() {
					e.MatMulIntegerU8(m, n, kk, a, kk, 117, true, w, kk, []uint8{131}, c, n)
				}
				reportRate(b, 2*float64(m*n*kk), cpu0, "GOP/s")
			})
			cf, scaleB, bias := make([]float32, m*n), []float32{0.01}, make([]float32, n)
			b.Run(fmt.Sprintf("%s-f32/%dx%dx%d", k.name, m, n, kk), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := procstat.CPUTime().Seconds()
				for b.Loop() {
					e.GemmU8F32(m, a, kk, 117, 0.02, qb, scaleB, bias, cf, n)
				}
				reportRate(b, 2*float64(m*n*kk), cpu0, "GOP/s")
			})
		}
	}
}

// BenchmarkMicroKernel measures each SGEMM microkernel alone on cache-hot
// panels (k = 128): the ceiling the blocked driver can approach on one core.
func BenchmarkMicroKernel(b *testing.B) {
	const k = 128
	for _, kern := range sgemmKernels() {
		r := rand.New(rand.NewPCG(3, 3))
		a := randSlice(r, kern.mr*k)
		w := randSlice(r, kern.nr*k)
		c := make([]float32, kern.mr*kern.nr)
		// 1000 calls per iteration, so that even -benchtime 1x runs long
		// enough for both clocks.
		b.Run(kern.name, func(b *testing.B) {
			cpu0 := procstat.CPUTime().Seconds()
			for b.Loop() {
				for range 1000 {
					kern.fn(k, &a[0], &w[0], &c[0], kern.nr, 1, 1)
				}
			}
			reportRate(b, 1000*2*float64(kern.mr*kern.nr*k), cpu0, "GFLOP/s")
		})
	}
}

// BenchmarkQuantizeU8 measures DynamicQuantizeLinear on one Whisper encoder
// activation (1500×384).
func BenchmarkQuantizeU8(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	x := randSlice(r, 1500*384)
	q := make([]uint8, len(x))
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		if _, _, err := QuantizeU8(q, x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackU8 measures packing a Whisper MLP weight (1536×384 as
// PyTorch [out, in], and as ONNX MatMul's [in, out]); the one-shot
// MatMulInteger calls pay this on every call.
func BenchmarkPackU8(b *testing.B) {
	const n, k = 1536, 384
	r := rand.New(rand.NewPCG(5, 5))
	w := make([]uint8, n*k)
	fillU8(r, w, false)
	var q QuantB
	for _, transB := range []bool{true, false} {
		ldb := n
		if transB {
			ldb = k
		}
		b.Run(fmt.Sprintf("transB=%v", transB), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				packB8(&q, transB, k, n, w, ldb, []uint8{128}, true)
			}
		})
	}
}

// convBenchShapes are the generator's dominant convolutions (per second
// of audio: 128 channels at 4800 frames, 256 at 800) and a decoder one.
var convBenchShapes = []convCase{
	{128, 128, 11, 18121, 1, 5, 25, 25, false},
	{128, 128, 3, 18121, 1, 1, 1, 1, false},
	{256, 256, 7, 3020, 1, 3, 9, 9, false},
	{1024, 1090, 3, 151, 1, 1, 1, 1, true},
}

// BenchmarkConv1d reports GFLOP/s of the implicit-GEMM convolution on
// Kokoro's shapes, next to im2col (the whole matrix) + SGEMM on the same
// engine for comparison.
func BenchmarkConv1d(b *testing.B) {
	e := Default()
	if os.Getenv("FORGE_BENCH_THREADS") == "1" {
		e, _ = NewGo(1, "")
	}
	for _, tc := range convBenchShapes {
		r := rand.New(rand.NewPCG(1, 1))
		w, x, bias := randSlice(r, tc.cout*tc.cin*tc.k), randSlice(r, tc.cin*tc.l), randSlice(r, tc.cout)
		lout := tc.lout()
		y := make([]float32, tc.cout*lout)
		s := Conv1dShape{Cin: tc.cin, L: tc.l, K: tc.k, Stride: tc.stride, Dilation: tc.dil, PadLeft: tc.padL, Lout: lout}
		flops := 2 * float64(tc.cout*tc.cin*tc.k*lout)
		pw := e.PackConvWeight(tc.cout, tc.cin*tc.k, w, tc.cin*tc.k)
		b.Run(fmt.Sprintf("implicit/%s", tc), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := procstat.CPUTime().Seconds()
			for b.Loop() {
				e.Conv1d(pw, s, x, tc.l, y, lout, bias)
			}
			reportRate(b, flops, cpu0, "GFLOP/s")
		})
		// The machine's bfloat16 unit, and each pair kernel the CPU runs
		// where it is not the default (on Intel's cores: slower than
		// float32, which the figures show).
		type bf16Conv struct {
			path string
			w    *ConvWeight
		}
		var bws []bf16Conv
		if bw := e.PackConvWeightBF16(tc.cout, tc.cin, tc.k, w); bw != nil {
			bws = append(bws, bf16Conv{BF16ConvPath(), bw})
		}
		for _, pk := range hardwarePairKernels() {
			if pk.name != BF16ConvPath() {
				bws = append(bws, bf16Conv{pk.name, e.packConvWeightPairs(pk, tc.cout, tc.cin, tc.k, w)})
			}
		}
		for _, bw := range bws {
			b.Run(fmt.Sprintf("%s/%s", bw.path, tc), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := procstat.CPUTime().Seconds()
				for b.Loop() {
					e.Conv1d(bw.w, s, x, tc.l, y, lout, bias)
				}
				reportRate(b, flops, cpu0, "GFLOP/s")
			})
		}
		col := make([]float32, tc.cin*tc.k*lout)
		b.Run(fmt.Sprintf("im2col/%s", tc), func(b *testing.B) {
			cpu0 := procstat.CPUTime().Seconds()
			for b.Loop() {
				for ck := 0; ck < tc.cin*tc.k; ck++ {
					c, k := ck/tc.k, ck%tc.k
					row := col[ck*lout : (ck+1)*lout]
					for t := range row {
						i := t*tc.stride + k*tc.dil - tc.padL
						if i >= 0 && i < tc.l {
							row[t] = x[c*tc.l+i]
						} else {
							row[t] = 0
						}
					}
				}
				e.SGEMM(false, false, tc.cout, lout, tc.cin*tc.k, 1, w, tc.cin*tc.k, col, lout, 0, y, lout)
			}
			reportRate(b, flops, cpu0, "GFLOP/s")
		})
	}
}

// hardwarePairKernels lists the pair kernels with hardware behind them that
// this CPU runs, default or not.
func hardwarePairKernels() []*bf16Kernel {
	ks := bf16Kernels()
	return ks[:len(ks)-1] // the portable kernel is last
}

// BenchmarkOffsetKernel measures each offset microkernel alone on a
// cache-hot window with a dilated convolution's offsets (32 channels of 11
// taps, dilation 5: unaligned rows), next to BenchmarkMicroKernel's packed
// sliver, and each bfloat16 pair kernel on the same convolution.
func BenchmarkOffsetKernel(b *testing.B) {
	const ch, taps, dil, width = 32, 11, 5, 320
	for _, kern := range sgemmKernels() {
		r := rand.New(rand.NewPCG(3, 3))
		k := ch * taps
		a := randSlice(r, kern.mr*k)
		win := randSlice(r, ch*width+64)
		off := make([]int, k)
		for p := range off {
			off[p] = (p/taps)*width + (p%taps)*dil
		}
		c := make([]float32, kern.mr*kern.nr)
		b.Run(kern.name, func(b *testing.B) {
			cpu0 := procstat.CPUTime().Seconds()
			for b.Loop() {
				for i := range 1000 {
					kern.offFn(k, &a[0], &win[(i%8)*kern.nr], &off[0], &c[0], kern.nr, 1)
				}
			}
			reportRate(b, 1000*2*float64(kern.mr*kern.nr*k), cpu0, "GFLOP/s")
		})
	}
	// The pair kernels on the same convolution in bfloat16: 16 channel
	// pairs of 11 taps, each pair step two depth values.
	for _, pk := range bf16Kernels() {
		r := rand.New(rand.NewPCG(3, 3))
		steps := ch / 2 * taps
		a := make([]uint32, pk.mr*steps)
		win := make([]uint32, ch/2*width+64)
		for i := range a {
			a[i] = r.Uint32() & 0x3FFF3FFF // finite, moderate bfloat16 pairs
		}
		for i := range win {
			win[i] = r.Uint32() & 0x3FFF3FFF
		}
		off := make([]int, steps)
		for p := range off {
			off[p] = (p/taps)*width + (p%taps)*dil
		}
		c := make([]float32, pk.mr*pk.nr)
		b.Run(pk.name, func(b *testing.B) {
			cpu0 := procstat.CPUTime().Seconds()
			for b.Loop() {
				for i := range 1000 {
					pk.fn(steps, &a[0], &win[(i%8)*pk.nr], &off[0], &c[0], pk.nr, 1)
				}
			}
			reportRate(b, 1000*4*float64(pk.mr*pk.nr*steps), cpu0, "GFLOP/s")
		})
	}
}

// gemmBF16BenchShapes are Whisper encoder products at 11 s (550 frames) as
// the graph calls them, m×n×k with B a PyTorch-layout weight (transposed):
// tiny's fused q/k/v, fc1 and fc2, and base's fc2.
var gemmBF16BenchShapes = []struct{ m, n, k int }{
	{550, 1152, 384},
	{550, 1536, 384},
	{550, 384, 1536},
	{550, 512, 2048},
}

// BenchmarkGemmBF16 reports GFLOP/s of the bfloat16 GEMM (the machine's
// unit, FORGE_BENCH_THREADS=1 for one thread) next to the float32 GEMM
// with the same weight packed (SGEMMPackedB, what a float32 linear layer
// runs), bias added in both.
func BenchmarkGemmBF16(b *testing.B) {
	e := Default()
	if os.Getenv("FORGE_BENCH_THREADS") == "1" {
		e, _ = NewGo(1, "")
	}
	for _, s := range gemmBF16BenchShapes {
		r := rand.New(rand.NewPCG(1, 1))
		x, w, bias := randSlice(r, s.m*s.k), randSlice(r, s.n*s.k), randSlice(r, s.n)
		c := make([]float32, s.m*s.n)
		flops := 2 * float64(s.m*s.n*s.k)
		var bws []*BF16Weight
		if bw := e.PackBF16(true, s.k, s.n, w, s.k); bw != nil {
			bws = append(bws, bw)
		}
		for _, pk := range hardwarePairKernels() {
			if pk.name != BF16ConvPath() {
				bws = append(bws, packBF16Pairs(pk, true, s.k, s.n, w, s.k))
			}
		}
		for _, bw := range bws {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", bw.Path(), s.m, s.n, s.k), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := procstat.CPUTime().Seconds()
				for b.Loop() {
					e.GemmBF16(false, s.m, x, s.k, bw, bias, c, s.n)
				}
				reportRate(b, flops, cpu0, "GFLOP/s")
			})
		}
		if e.UsesBLAS() {
			continue
		}
		pb := e.PackB(true, s.k, s.n, w, s.k)
		b.Run(fmt.Sprintf("f32/%dx%dx%d", s.m, s.n, s.k), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := procstat.CPUTime().Seconds()
			for b.Loop() {
				e.SGEMMPackedB(false, s.m, x, s.k, pb, c, s.n)
				for i := 0; i < s.m; i++ {
					row := c[i*s.n : (i+1)*s.n]
					for j := range row {
						row[j] += bias[j]
					}
				}
			}
			reportRate(b, flops, cpu0, "GFLOP/s")
		})
	}
}
