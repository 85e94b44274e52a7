package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// reportRate reports ops per wall-clock second under unit, and per
// CPU-second (all of the process's threads, BLAS threads included) under
// unit+"/cpu-s" when the CPU clock is available.
func reportRate(b *testing.B, ops float64, cpu0 float64, unit string) {
	b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds()/1e9, unit)
	if cpu := cpuSeconds() - cpu0; cpu0 > 0 && cpu > 0 {
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
				cpu0 := cpuSeconds()
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
				cpu0 := cpuSeconds()
				for b.Loop() {
					e.GemmU8(m, a, kk, 117, qb, c, n)
				}
				reportRate(b, 2*float64(m*n*kk), cpu0, "GOP/s")
			})
			b.Run(fmt.Sprintf("%s-oneshot/%dx%dx%d", k.name, m, n, kk), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuSeconds()
				for b.Loop() {
					e.MatMulIntegerU8(m, n, kk, a, kk, 117, true, w, kk, []uint8{131}, c, n)
				}
				reportRate(b, 2*float64(m*n*kk), cpu0, "GOP/s")
			})
			cf, scaleB, bias := make([]float32, m*n), []float32{0.01}, make([]float32, n)
			b.Run(fmt.Sprintf("%s-f32/%dx%dx%d", k.name, m, n, kk), func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := cpuSeconds()
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
			cpu0 := cpuSeconds()
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
