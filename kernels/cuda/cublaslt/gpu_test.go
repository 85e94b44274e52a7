package cublaslt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// The tests named TestGPU* need a CUDA driver, a device and cuBLASLt;
// without them they skip, saying why. On the GPU machine:
//
//	./cublaslt.test -test.v -test.run GPU

// gpuEnv is a thread with a handle and a workspace on device 0.
type gpuEnv struct {
	d  *driver.Driver
	th *driver.Thread
	h  *Handle
	ws driver.DevicePtr
}

func newGPUEnv(t *testing.T) *gpuEnv {
	t.Helper()
	d, err := driver.Load()
	if err != nil {
		t.Skipf("no CUDA driver: %v", err)
	}
	l, err := Load()
	if err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	th, err := d.NewThread(0)
	if err != nil {
		t.Fatal(err)
	}
	e := &gpuEnv{d: d, th: th}
	err = th.Do(func() (err error) {
		if e.h, err = l.NewHandle(); err != nil {
			return err
		}
		e.ws, err = d.MemAlloc(RecommendedWorkspace)
		return err
	})
	if err != nil {
		th.Close()
		t.Fatal(err)
	}
	t.Logf("cuBLASLt %s (version %d), driver CUDA %d", l.Path, l.Version(), d.Version())
	t.Cleanup(func() {
		if err := th.Do(func() error { return errors.Join(e.h.Close(), d.MemFree(e.ws)) }); err != nil {
			t.Error(err)
		}
		if err := th.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// encode rounds v to t and returns the device bytes and the rounded values.
func encode(v []float32, t DType) ([]byte, []float64) {
	b := make([]byte, len(v)*t.Size())
	r := make([]float64, len(v))
	for i, x := range v {
		switch t {
		case F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
			r[i] = float64(x)
		case F16:
			h := kernels.F32ToF16(x)
			binary.LittleEndian.PutUint16(b[2*i:], h)
			r[i] = float64(kernels.F16ToF32(h))
		case BF16:
			h := kernels.F32ToBF16(x)
			binary.LittleEndian.PutUint16(b[2*i:], h)
			r[i] = float64(kernels.BF16ToF32(h))
		}
	}
	return b, r
}

func decode(b []byte, t DType) []float64 {
	r := make([]float64, len(b)/t.Size())
	for i := range r {
		switch t {
		case F32:
			r[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case F16:
			r[i] = float64(kernels.F16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
		case BF16:
			r[i] = float64(kernels.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
		}
	}
	return r
}

// gemmCase is one product with the error it may have relative to the
// magnitude bound Σ|alpha·a·b| + |beta·c| + |bias|.
type gemmCase struct {
	g   GEMM
	tol float64
}

func gemmCases() []gemmCase {
	f32 := func(g GEMM) GEMM { g.In, g.Out = F32, F32; return g }
	with := func(g GEMM, in, out DType) GEMM { g.In, g.Out = in, out; return g }
	sq := GEMM{M: 64, N: 96, K: 128, Alpha: 1, Beta: 0}
	odd := GEMM{M: 33, N: 17, K: 65, Alpha: 0.5, Beta: 2}
	batched := GEMM{M: 20, N: 24, K: 40, Batch: 5, StrideA: 20 * 40, StrideB: 40 * 24, StrideC: 20 * 24, Alpha: 1, Beta: 1}
	shared := GEMM{M: 20, N: 24, K: 40, Batch: 5, StrideA: 20 * 40, StrideC: 20 * 24, TransB: true, Alpha: 1, Beta: 0}
	padded := GEMM{M: 31, N: 40, K: 24, LDA: 32, LDB: 48, LDC: 64, Alpha: 1, Beta: 0.25}
	withBias := func(g GEMM) GEMM { g.Bias = 1; return g }
	tr := func(g GEMM, a, b bool) GEMM { g.TransA, g.TransB = a, b; return g }
	tf := func(g GEMM) GEMM { g.TF32 = true; return g }
	return []gemmCase{
		{f32(sq), 1e-5},
		{f32(tr(odd, true, false)), 1e-5},
		{f32(tr(odd, false, true)), 1e-5},
		{f32(tr(odd, true, true)), 1e-5},
		{f32(batched), 1e-5},
		{f32(shared), 1e-5},
		{f32(padded), 1e-5},
		{f32(withBias(sq)), 1e-5},
		{tf(f32(sq)), 4e-3},
		{with(sq, F16, F32), 1e-5},
		{with(tr(sq, false, true), F16, F16), 2e-3},
		{with(withBias(tr(odd, false, true)), F16, F32), 1e-5},
		{with(shared, F16, F32), 1e-5},
		{with(sq, BF16, F32), 1e-5},
		{with(withBias(batched), BF16, BF16), 1.6e-2},
	}
}

// runGEMM uploads random operands for c.g, runs it (through run, which
// may capture it) and compares with a float64 reference on the rounded
// inputs. The device pointers in the case are replaced.
func runGEMM(t *testing.T, e *gpuEnv, c gemmCase, rng *rand.Rand, run func(g *GEMM, s driver.Stream) error) {
	g := c.g
	batch := max(g.Batch, 1)
	ra, ca := stored(g.M, g.K, g.TransA)
	rb, cb := stored(g.K, g.N, g.TransB)
	lda, ldb, ldc := ld(g.LDA, ca), ld(g.LDB, cb), ld(g.LDC, g.N)
	span := func(rows, ldx int, stride int64) int { return int(stride)*(batch-1) + rows*ldx }
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	hostA, refA := encode(rnd(span(ra, lda, g.StrideA)), g.In)
	hostB, refB := encode(rnd(span(rb, ldb, g.StrideB)), g.In)
	hostC, refC := encode(rnd(span(g.M, ldc, g.StrideC)), g.Out)
	var hostBias []byte
	var refBias []float64
	if g.Bias != 0 {
		hostBias, refBias = encode(rnd(g.N), g.Out)
	}
	name := describe(g.key())
	got := make([]byte, len(hostC))
	err := e.th.Do(func() error {
		d := e.d
		s, err := d.StreamCreate(driver.StreamNonBlocking)
		if err != nil {
			return err
		}
		defer d.StreamDestroy(s)
		var ptrs []driver.DevicePtr
		defer func() {
			for _, p := range ptrs {
				d.MemFree(p)
			}
		}()
		up := func(b []byte) (driver.DevicePtr, error) {
			p, err := d.MemAlloc(len(b))
			if err != nil {
				return 0, err
			}
			ptrs = append(ptrs, p)
			return p, d.MemcpyHtoDAsync(p, b, s)
		}
		if g.A, err = up(hostA); err != nil {
			return err
		}
		if g.B, err = up(hostB); err != nil {
			return err
		}
		if g.C, err = up(hostC); err != nil {
			return err
		}
		if g.Bias != 0 {
			if g.Bias, err = up(hostBias); err != nil {
				return err
			}
		}
		g.Workspace, g.WorkspaceBytes, g.Stream = e.ws, RecommendedWorkspace, s
		if err := run(&g, s); err != nil {
			return err
		}
		if err := d.MemcpyDtoHAsync(got, g.C, s); err != nil {
			return err
		}
		return d.StreamSynchronize(s)
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := decode(got, g.Out)
	worst := 0.0
	for b := range batch {
		oa, ob, oc := b*int(g.StrideA), b*int(g.StrideB), b*int(g.StrideC)
		for i := range g.M {
			for j := range g.N {
				var s, mag float64
				for l := range g.K {
					x := refA[oa+i*lda+l]
					if g.TransA {
						x = refA[oa+l*lda+i]
					}
					y := refB[ob+l*ldb+j]
					if g.TransB {
						y = refB[ob+j*ldb+l]
					}
					s += x * y
					mag += math.Abs(x * y)
				}
				idx := oc + i*ldc + j
				want := float64(g.Alpha)*s + float64(g.Beta)*refC[idx]
				mag = math.Abs(float64(g.Alpha))*mag + math.Abs(float64(g.Beta)*refC[idx])
				if refBias != nil {
					want += refBias[j]
					mag += math.Abs(refBias[j])
				}
				e := math.Abs(out[idx]-want) / (mag + 1e-30)
				if math.IsNaN(out[idx]) || e > c.tol {
					t.Fatalf("%s: C[%d][%d][%d] = %v, want %v (error %.2g of the bound %.3g, tolerance %.2g)", name, b, i, j, out[idx], want, e, mag, c.tol)
				}
				worst = max(worst, e)
			}
		}
		// Outside the matrices (padding between rows) C is untouched.
		for i := range g.M {
			for j := g.N; j < ldc && oc+i*ldc+j < len(out); j++ {
				if idx := oc + i*ldc + j; out[idx] != refC[idx] {
					t.Fatalf("%s: padding C[%d][%d][%d] changed", name, b, i, j)
				}
			}
		}
	}
	t.Logf("%s: worst error %.2g of the bound (tolerance %.2g)", name, worst, c.tol)
}

func TestGPUMatmul(t *testing.T) {
	e := newGPUEnv(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range gemmCases() {
		runGEMM(t, e, c, rng, func(g *GEMM, _ driver.Stream) error { return e.h.Matmul(g) })
	}
	// Every case is a distinct configuration; running them again must
	// reuse the cached plans (new device pointers keep the alignments).
	n := e.h.Plans()
	for _, c := range gemmCases()[:3] {
		runGEMM(t, e, c, rng, func(g *GEMM, _ driver.Stream) error { return e.h.Matmul(g) })
	}
	if e.h.Plans() != n {
		t.Errorf("plans grew from %d to %d on repeated shapes", n, e.h.Plans())
	}
}

// TestGPUMatmulCaptured records products into a CUDA graph and replays it:
// with Beta 1 each replay adds op(A)·op(B) to C once more.
func TestGPUMatmulCaptured(t *testing.T) {
	e := newGPUEnv(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []gemmCase{
		{GEMM{M: 64, N: 32, K: 48, In: F32, Out: F32, Alpha: 1, Beta: 1}, 1e-5},
		{GEMM{M: 64, N: 32, K: 48, In: F16, Out: F32, Alpha: 1, Beta: 1, TransB: true}, 1e-5},
	} {
		const replays = 3
		// Three replays of C += A·B equal one C += 3·A·B.
		want := c
		want.g.Alpha = replays
		want.g.Beta = 1
		runGEMM(t, e, want, rng, func(want *GEMM, s driver.Stream) error {
			d := e.d
			g := *want // the reference keeps Alpha = replays
			g.Alpha = 1
			if err := e.h.Prepare(&g); err != nil {
				return err
			}
			if err := d.StreamBeginCapture(s, driver.CaptureThreadLocal); err != nil {
				return err
			}
			if err := e.h.Matmul(&g); err != nil {
				_, _ = d.StreamEndCapture(s)
				return err
			}
			graph, err := d.StreamEndCapture(s)
			if err != nil {
				return err
			}
			defer d.GraphDestroy(graph)
			exec, err := d.GraphInstantiate(graph, 0)
			if err != nil {
				return err
			}
			defer d.GraphExecDestroy(exec)
			for range replays {
				if err := d.GraphLaunch(exec, s); err != nil {
					return fmt.Errorf("replay: %w", err)
				}
			}
			return nil
		})
	}
}

// BenchmarkGPUMatmul runs Whisper-tiny-sized products (1500 frames × 384
// features, f16 in, f32 out) back to back on one stream, enqueued from
// the thread, and synchronises at the end: ns/op is the device time per
// product once the host keeps ahead.
func BenchmarkGPUMatmul(b *testing.B) {
	d, err := driver.Load()
	if err != nil {
		b.Skipf("no CUDA driver: %v", err)
	}
	l, err := Load()
	if err != nil {
		b.Skipf("no cuBLASLt: %v", err)
	}
	th, err := d.NewThread(0)
	if err != nil {
		b.Fatal(err)
	}
	defer th.Close()
	for _, c := range []struct {
		name    string
		m, n, k int
		in, out DType
	}{
		{"1500x384x384-f16-f32", 1500, 384, 384, F16, F32},
		{"1500x1536x384-f16-f16", 1500, 1536, 384, F16, F16},
		{"1500x384x384-f32", 1500, 384, 384, F32, F32},
	} {
		b.Run(c.name, func(b *testing.B) {
			err := th.Do(func() error {
				h, err := l.NewHandle()
				if err != nil {
					return err
				}
				defer h.Close()
				var ptrs [4]driver.DevicePtr
				sizes := [4]int{c.m * c.k * c.in.Size(), c.k * c.n * c.in.Size(), c.m * c.n * c.out.Size(), RecommendedWorkspace}
				for i, n := range sizes {
					if ptrs[i], err = d.MemAlloc(n); err != nil {
						return err
					}
					defer d.MemFree(ptrs[i])
					if err := d.MemsetD8Async(ptrs[i], 0, n, 0); err != nil {
						return err
					}
				}
				g := GEMM{M: c.m, N: c.n, K: c.k, TransB: true, A: ptrs[0], B: ptrs[1], C: ptrs[2],
					Alpha: 1, In: c.in, Out: c.out, Workspace: ptrs[3], WorkspaceBytes: sizes[3]}
				if err := h.Matmul(&g); err != nil {
					return err
				}
				if err := d.CtxSynchronize(); err != nil {
					return err
				}
				for b.Loop() {
					if err := h.Matmul(&g); err != nil {
						return err
					}
				}
				return d.CtxSynchronize()
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(2*float64(c.m*c.n*c.k)*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
	}
}
