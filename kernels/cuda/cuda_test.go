package cuda_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/signalcmp"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cuda"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// open returns the first GPU, or skips loudly (CI has none).
func open(t testing.TB, prec kernels.DType) *cuda.Backend {
	t.Helper()
	b, err := cuda.New(kernels.Options{Precision: prec})
	if err != nil {
		t.Skipf("SKIPPED: no usable CUDA GPU here, so the CUDA backend is not tested: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestConformance runs the conformance kit: every op the backend supports
// and random fused expressions against kernels/cpu.
func TestConformance(t *testing.T) {
	b := open(t, kernels.F32)
	t.Logf("device: %s", b.Device())
	kerneltest.Check(t, b)
	st := b.CompileStats()
	t.Logf("kernels: %d modules compiled by NVRTC in %v, %d loaded from the disk cache in %v", st.Compiled, st.CompileTime, st.Cached, st.CacheTime)
}

// TestPlanReplay runs one program many times through the engine: the plan
// runs step by step, is recorded as a CUDA graph on its second run and
// replayed after; every run must give the CPU's result.
func TestPlanReplay(t *testing.T) {
	b := open(t, kernels.F32)
	ctx := context.Background()
	build := func(g *graph.Graph) (graph.Tensor, graph.Tensor) {
		x := g.Input("x", graph.F32, graph.Shape{4, 64})
		w := g.ParamF32("w", graph.Shape{64, 32}, ramp(64*32, 0.01))
		y := x.MatMul(w).Gelu().LayerNorm(g.ParamF32("s", graph.Shape{32}, ramp(32, 0.1)), graph.Tensor{}, 1e-5)
		return x, y.Softmax(-1)
	}
	gc, gd := graph.New(), graph.New()
	xc, yc := build(gc)
	xd, yd := build(gd)
	pc, err := graph.NewEngine(cpu.New()).Compile(ctx, yc)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	eng := graph.NewEngine(b)
	pd, err := eng.Compile(ctx, yd)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	want, got := make([]float32, 4*32), make([]float32, 4*32)
	for run := range 5 {
		in := ramp(4*64, float32(run+1)*0.03)
		for _, p := range []struct {
			prog *graph.Program
			x    graph.Tensor
			out  []float32
		}{{pc, xc, want}, {pd, xd, got}} {
			if err := p.prog.SetF32(ctx, p.x, in); err != nil {
				t.Fatal(err)
			}
			if err := p.prog.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.prog.ReadF32(ctx, 0, p.out); err != nil {
				t.Fatal(err)
			}
		}
		var worst float64
		for i := range want {
			worst = max(worst, abs(float64(got[i]-want[i])))
		}
		if worst > 1e-5 || worst != worst {
			t.Fatalf("run %d: GPU differs from CPU by %g", run, worst)
		}
	}
	t.Logf("5 runs, %d steps each; backend dispatches %d (a replayed run counts one)", pd.Steps(), b.Stats().Dispatches)
}

func ramp(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * float32((i*7)%23-11)
	}
	return v
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestLargeProducts checks the paths the conformance kit's small shapes
// do not reach: convolutions as im2col and a product (with dilation,
// stride, bias, and columns in chunks), transposed convolutions as a
// product and a gather, and the step-by-step LSTM, against the CPU.
func TestLargeProducts(t *testing.T) {
	// f32 within 1e-5; with f16 products within half precision's rounding
	// (the columns of the stride-2 convolution, 2,500 halves a row, are
	// padded to a 16-byte row for cuBLASLt).
	for _, tc := range []struct {
		prec kernels.DType
		tol  float64
	}{{kernels.F32, 1e-5}, {kernels.F16, 3e-3}} {
		t.Run(tc.prec.String(), func(t *testing.T) { testLargeProducts(t, tc.prec, tc.tol) })
	}
}

func testLargeProducts(t *testing.T, prec kernels.DType, tol float64) {
	b := open(t, prec)
	build := func(g *graph.Graph) []graph.Tensor {
		x := g.ParamF32("x", graph.Shape{2, 256, 5000}, ramp(2*256*5000, 0.001))
		w7 := g.ParamF32("w7", graph.Shape{64, 256, 7}, ramp(64*256*7, 0.002))
		bias := g.ParamF32("b", graph.Shape{64}, ramp(64, 0.1))
		xt := g.ParamF32("xt", graph.Shape{1, 256, 700}, ramp(256*700, 0.003))
		wt := g.ParamF32("wt", graph.Shape{256, 128, 20}, ramp(256*128*20, 0.001))
		bt := g.ParamF32("bt", graph.Shape{128}, ramp(128, 0.2))
		seq := g.ParamF32("seq", graph.Shape{1, 150, 96}, ramp(150*96, 0.01))
		lw := func(name string, shape ...int) graph.Tensor {
			return g.ParamF32(name, graph.Shape(shape), ramp(graph.Shape(shape).Len(), 0.004))
		}
		y, _, _ := seq.LSTM(graph.LSTMWeights{WIH: lw("wih", 512, 96), WHH: lw("whh", 512, 128), BIH: lw("bih", 512), BHH: lw("bhh", 512)},
			&graph.LSTMWeights{WIH: lw("wihr", 512, 96), WHH: lw("whhr", 512, 128), BIH: lw("bihr", 512), BHH: lw("bhhr", 512)},
			graph.Tensor{}, graph.Tensor{}, true)
		return []graph.Tensor{
			x.Conv1d(w7, bias, graph.ConvOpts{Padding: 9, Dilation: 3}),
			x.Conv1d(w7, graph.Tensor{}, graph.ConvOpts{Stride: 2, Padding: 3}),
			xt.ConvTranspose1d(wt, bt, graph.ConvOpts{Stride: 10, Padding: 5}),
			y,
		}
	}
	want, got := onCPUAndGPU(t, b, build)
	for i := range want {
		rel := signalcmp.RelL2(got[i].F32(), want[i].F32())
		t.Logf("output %d %v: relative L2 %.2g", i, want[i].Shape, rel)
		if !(rel <= tol) {
			t.Errorf("output %d differs from the CPU (relative L2 %g)", i, rel)
		}
	}
}

// TestHalfAttention: with f16 and bf16 products, attention over Whisper's
// head size runs on tensor cores; it must stay within half precision's
// error of the CPU (relative L2 ≤ 5e-3 in f16, 2e-2 in bf16), masked and
// not, for query counts
// that do not fill a block.
func TestHalfAttention(t *testing.T) {
	// Shapes: a batch of two with few keys, one 30-s window's encoder, a
	// short window's queries over many keys, rows and keys that fill no
	// tile, a single tile (all forge_attention_fa), and a decoder's few
	// rows (forge_attention_tc).
	shapes := []struct{ batch, n, keys int }{{2, 1500, 300}, {1, 1500, 1500}, {1, 300, 1450}, {1, 1000, 777}, {1, 300, 50}, {2, 77, 300}}
	for _, prec := range []kernels.DType{kernels.F16, kernels.BF16} {
		b := open(t, prec)
		for _, sh := range shapes {
			n, keys, nb := sh.n, sh.keys, sh.batch
			build := func(g *graph.Graph) []graph.Tensor {
				q := g.ParamF32("q", graph.Shape{nb, 6, n, 64}, ramp(nb*6*n*64, 0.013))
				k := g.ParamF32("k", graph.Shape{nb, 6, keys, 64}, ramp(nb*6*keys*64, 0.011))
				v := g.ParamF32("v", graph.Shape{nb, 6, keys, 64}, ramp(nb*6*keys*64, 0.02))
				kT := g.ParamF32("kt", graph.Shape{nb, 6, 64, keys}, ramp(nb*6*keys*64, 0.017)) // keys stored [d, s], as the decoder's cross cache
				mask := g.ParamF32("m", graph.Shape{n, keys}, ramp(n*keys, 0.05))
				return []graph.Tensor{q.Attention(k, v, graph.Tensor{}), q.Attention(kT.T(), v, mask)}
			}
			want, got := onCPUAndGPU(t, b, build)
			for i := range want {
				rel := signalcmp.RelL2(got[i].F32(), want[i].F32())
				t.Logf("%s, batch %d, %d queries, %d keys, output %d: relative L2 %.2g", prec, nb, n, keys, i, rel)
				tol := 5e-3 // f16 keeps 11 bits
				if prec == kernels.BF16 {
					tol = 2e-2 // bfloat16 keeps 8
				}
				if !(rel <= tol) {
					t.Errorf("%s, batch %d, %d queries, %d keys, output %d: relative L2 %g against the CPU", prec, nb, n, keys, i, rel)
				}
			}
		}
	}
}

// TestLSTMOneLaunch: an LSTM of at most 8 sequences runs its whole
// recurrence in one launch (forge_lstm_loop), a larger batch a launch per
// step (forge_lstm_step). Both must give the CPU's outputs, final h and c
// included, within float32 rounding (relative L2 ≤ 1e-5), over Kokoro's
// hidden size, both directions and a given initial state. (The two paths
// cannot be compared bit for bit through a batch of 8 and one of 9: the
// input projections are one cuBLASLt product of T·B rows, whose
// algorithm, and so rounding, depends on the row count.)
func TestLSTMOneLaunch(t *testing.T) {
	b := open(t, kernels.F32)
	const T, I, H = 37, 48, 256
	build := func(g *graph.Graph, batch int) []graph.Tensor {
		seq := g.ParamF32("seq", graph.Shape{T, batch, I}, ramp(T*batch*I, 0.013))
		lw := func(name string, scale float32, shape ...int) graph.Tensor {
			return g.ParamF32(name, graph.Shape(shape), ramp(graph.Shape(shape).Len(), scale))
		}
		h0 := g.ParamF32("h0", graph.Shape{2, batch, H}, ramp(2*batch*H, 0.01))
		c0 := g.ParamF32("c0", graph.Shape{2, batch, H}, ramp(2*batch*H, 0.02))
		y, h, c := seq.LSTM(graph.LSTMWeights{WIH: lw("wih", 0.004, 4*H, I), WHH: lw("whh", 0.003, 4*H, H), BIH: lw("bih", 0.1, 4*H), BHH: lw("bhh", 0.05, 4*H)},
			&graph.LSTMWeights{WIH: lw("wihr", 0.005, 4*H, I), WHH: lw("whhr", 0.002, 4*H, H), BIH: lw("bihr", 0.1, 4*H), BHH: lw("bhhr", 0.07, 4*H)},
			h0, c0, false)
		return []graph.Tensor{y, h, c}
	}
	for _, batch := range []int{1, 8, 9} {
		want, got := onCPUAndGPU(t, b, func(g *graph.Graph) []graph.Tensor { return build(g, batch) })
		for i, name := range []string{"y", "h", "c"} {
			if rel := signalcmp.RelL2(got[i].F32(), want[i].F32()); !(rel <= 1e-5) {
				t.Errorf("batch %d: %s differs from the CPU's by relative L2 %.2g", batch, name, rel)
			}
		}
	}
}

// onCPUAndGPU evaluates the outputs build makes, once on the CPU backend
// and once on b, each in a graph of its own.
func onCPUAndGPU(t *testing.T, b kernels.Backend, build func(*graph.Graph) []graph.Tensor) (cpuOut, gpuOut []*graph.Value) {
	t.Helper()
	ctx := context.Background()
	cpuOut, err := graph.NewEngine(cpu.New()).Eval(ctx, build(graph.New())...)
	if err != nil {
		t.Fatal(err)
	}
	gpuOut, err = graph.NewEngine(b).Eval(ctx, build(graph.New())...)
	if err != nil {
		t.Fatal(err)
	}
	return cpuOut, gpuOut
}

// TestTransposeCopy: copies of matrices read down their columns take
// forge_transpose (tiles of 32, so sizes that are not multiples of 32 test
// its edges), a permutation that does not reduce to one matrix the
// generated kernel; both must equal the CPU's copy exactly.
func TestTransposeCopy(t *testing.T) {
	b := open(t, kernels.F32)
	build := func(g *graph.Graph) []graph.Tensor {
		a := g.ParamF32("a", graph.Shape{37, 100}, ramp(3700, 0.01))
		c := g.ParamF32("c", graph.Shape{3, 1500, 64}, ramp(3*1500*64, 0.001))
		return []graph.Tensor{
			a.T().Reshape(3700),                    // [100, 37] from columns of 100
			a.Slice(1, 3, 90).T().Reshape(87 * 37), // a window of the columns
			c.Permute(0, 2, 1).Reshape(3, 64*1500), // three matrices: generated
		}
	}
	want, got := onCPUAndGPU(t, b, build)
	for i := range want {
		if w, g := want[i].F32(), got[i].F32(); !slices.Equal(w, g) {
			t.Errorf("output %d %v differs from the CPU's copy", i, want[i].Shape)
		}
	}
}

// TestLayerNormRows: layer norms over many rows of 128·k values take the
// warp-per-row kernel (384: Whisper tiny; 1,024: the most it takes; 128),
// others the block-per-row one (1,000, 33), with and without weight and
// bias; they must match the CPU's.
func TestLayerNormRows(t *testing.T) {
	b := open(t, kernels.F32)
	build := func(g *graph.Graph) []graph.Tensor {
		var outs []graph.Tensor
		for _, n := range []int{384, 1024, 128, 1000, 33} {
			x := g.ParamF32(fmt.Sprint("x", n), graph.Shape{2, 150, n}, ramp(300*n, 0.07))
			w := g.ParamF32(fmt.Sprint("w", n), graph.Shape{n}, ramp(n, 0.01))
			bias := g.ParamF32(fmt.Sprint("b", n), graph.Shape{n}, ramp(n, 0.02))
			outs = append(outs, x.LayerNorm(w, bias, 1e-5), x.LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5))
		}
		return outs
	}
	want, got := onCPUAndGPU(t, b, build)
	for i := range want {
		if rel := signalcmp.RelL2(got[i].F32(), want[i].F32()); !(rel <= 1e-6) {
			t.Errorf("output %d %v differs from the CPU (relative L2 %g)", i, want[i].Shape, rel)
		}
	}
}

// TestGroupNormSplit: group norms whose groups alone would leave the GPU
// idle run as two kernels, a group's chunks summed by several blocks
// (forge_group_stats, forge_group_apply); Kokoro's instance norms over
// 47,761 frames, groups of two channels, and a small norm that keeps
// forge_group_norm, against the CPU within float32 rounding (relative L2
// ≤ 1e-6), with and without an affine.
func TestGroupNormSplit(t *testing.T) {
	b := open(t, kernels.F32)
	shapes := []struct{ n, c, l, groups int }{{1, 128, 47761, 128}, {2, 8, 3000, 4}, {1, 4, 100, 2}}
	build := func(g *graph.Graph) []graph.Tensor {
		var outs []graph.Tensor
		for i, sh := range shapes {
			x := g.ParamF32(fmt.Sprint("x", i), graph.Shape{sh.n, sh.c, sh.l}, ramp(sh.n*sh.c*sh.l, 0.37))
			w := g.ParamF32(fmt.Sprint("w", i), graph.Shape{sh.c}, ramp(sh.c, 0.01))
			bias := g.ParamF32(fmt.Sprint("b", i), graph.Shape{sh.c}, ramp(sh.c, 0.02))
			outs = append(outs, x.GroupNorm(sh.groups, w, bias, 1e-5), x.AddScalar(3).GroupNorm(sh.groups, graph.Tensor{}, graph.Tensor{}, 1e-5))
		}
		return outs
	}
	want, got := onCPUAndGPU(t, b, build)
	for i := range want {
		if rel := signalcmp.RelL2(got[i].F32(), want[i].F32()); !(rel <= 1e-6) {
			t.Errorf("output %d %v differs from the CPU (relative L2 %g)", i, want[i].Shape, rel)
		}
	}
}

// TestLinearQRows: int8 weight-only products of 1 to 40 rows, uint8 and
// int8 weights, against the CPU within float32 rounding (relative L2 ≤
// 1e-6). From linearQGEMMRows rows a constant weight runs dequantized
// through cuBLASLt, a weight fed at run time through forge_linear_q.
func TestLinearQRows(t *testing.T) {
	b := open(t, kernels.F32)
	const K, N = 384, 1000
	wq := make([]byte, N*K)
	for i := range wq {
		wq[i] = byte(i*131 + i/K*7)
	}
	for _, dt := range []graph.DType{graph.U8, graph.I8} {
		for _, M := range []int{1, 8, 16, 40} {
			build := func(g *graph.Graph) []graph.Tensor {
				x := g.InputF32("x", graph.Shape{M, K}, ramp(M*K, 0.013))
				s := g.Scalar(0.021, graph.F32)
				z := g.Const(dt, graph.Shape{}, []byte{0xF9})
				return []graph.Tensor{
					x.LinearQ(g.Param("w", dt, graph.Shape{N, K}, wq), s, z),
					x.LinearQ(g.InputBytes("wq", dt, graph.Shape{N, K}, wq), s, z),
				}
			}
			want, got := onCPUAndGPU(t, b, build)
			for i := range want {
				if rel := signalcmp.RelL2(got[i].F32(), want[i].F32()); !(rel <= 1e-6) {
					t.Errorf("%s, %d rows, output %d: relative L2 %.2g against the CPU", dt, M, i, rel)
				}
			}
		}
	}
}

// planOnly hides the backend's kernels.FusingPlanner: every intermediate
// counts as read after the run, so nothing is merged or stored in half.
type planOnly struct{ *cuda.Backend }

// Plan implements kernels.Planner.
func (p planOnly) Plan(steps []kernels.Step) (kernels.Plan, error) { return p.Backend.Plan(steps) }

// TestHalfFeedsExact runs an encoder MLP (norm, fc1, GELU, fc2, residual)
// with half-precision products on the GPU, with the norm and the GELU
// storing fc1's and fc2's operands in half precision, and without: the
// outputs must be the same bits, since both round to nearest even.
func TestHalfFeedsExact(t *testing.T) {
	for _, prec := range []kernels.DType{kernels.F16, kernels.BF16} {
		b := open(t, prec)
		build := func(g *graph.Graph) []graph.Tensor {
			x := g.ParamF32("x", graph.Shape{2, 750, 384}, ramp(1500*384, 0.05))
			w := g.ParamF32("w", graph.Shape{384}, ramp(384, 0.01))
			bias := g.ParamF32("b", graph.Shape{384}, ramp(384, 0.02))
			w1 := g.ParamF32("w1", graph.Shape{384, 1536}, ramp(384*1536, 0.003))
			b1 := g.ParamF32("b1", graph.Shape{1536}, ramp(1536, 0.01))
			w2 := g.ParamF32("w2", graph.Shape{1536, 384}, ramp(1536*384, 0.002))
			h := x.LayerNorm(w, bias, 1e-5).MatMul(w1).Add(b1).Gelu().MatMul(w2)
			return []graph.Tensor{h.Add(x)}
		}
		ctx := context.Background()
		got, err := graph.NewEngine(b).Eval(ctx, build(graph.New())...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := graph.NewEngine(planOnly{b}).Eval(ctx, build(graph.New())...)
		if err != nil {
			t.Fatal(err)
		}
		g, w := got[0].F32(), want[0].F32()
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%v: output[%d] = %v with the half stores, %v without", prec, i, g[i], w[i])
			}
		}
	}
}

// BenchmarkHalfAttention: the encoder's self-attention of Whisper tiny
// (6 heads of 64, one 30-s window of 1,500 frames, and a batch of 32
// windows) with f16 products, queries, keys and values given, so the
// half-precision copies of the keys and values and the flash kernel are
// all a run launches (replayed as a CUDA graph after its second run).
func BenchmarkHalfAttention(b *testing.B) {
	for _, windows := range []int{1, 32} {
		b.Run(fmt.Sprintf("windows-%d", windows), func(b *testing.B) {
			be := open(b, kernels.F16)
			ctx := context.Background()
			g := graph.New()
			shape := graph.Shape{windows, 6, 1500, 64}
			q := g.Input("q", graph.F32, shape)
			k := g.Input("k", graph.F32, shape)
			v := g.Input("v", graph.F32, shape)
			p, err := graph.NewEngine(be).Compile(ctx, q.Attention(k, v, graph.Tensor{}))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			for i, x := range []graph.Tensor{q, k, v} {
				if err := p.SetF32(ctx, x, ramp(shape.Len(), 0.013+float32(i)*0.002)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if err := p.Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*windows), "µs/window")
		})
	}
}

// TestResidualProducts: a product whose output only a sum with another
// tensor of its shape (and perhaps a bias) reads computes the sum itself
// (cuBLASLt's C, β = 1): the results must be the CPU's within the
// product's own rounding (relative L2 ≤ 1e-5 in f32, 3e-3 with f16
// products), for a linear layer with its bias, a bare product with the
// bias in the sum, and a batch of two; the first two sums must take no
// launch of their own.
func TestResidualProducts(t *testing.T) {
	for _, tc := range []struct {
		prec kernels.DType
		tol  float64
	}{{kernels.F32, 1e-5}, {kernels.F16, 3e-3}} {
		t.Run(tc.prec.String(), func(t *testing.T) {
			b := open(t, tc.prec)
			build := func(g *graph.Graph) []graph.Tensor {
				// Inputs, not parameters: sums of constants would be
				// folded when the program is compiled.
				x := g.InputF32("x", graph.Shape{2, 300, 384}, ramp(2*300*384, 0.01))
				h := g.InputF32("h", graph.Shape{2, 300, 384}, ramp(2*300*384, 0.003))
				w := g.ParamF32("w", graph.Shape{384, 384}, ramp(384*384, 0.002))
				wt := g.ParamF32("wt", graph.Shape{384, 384}, ramp(384*384, 0.004))
				bias := g.ParamF32("b", graph.Shape{384}, ramp(384, 0.1))
				x0 := x.Slice(0, 0, 1).Squeeze(0)
				return []graph.Tensor{
					x.Add(h.Linear(w, bias)),                                 // the bias in the product's epilogue
					h.Slice(0, 0, 1).Squeeze(0).MatMul(wt).Add(bias).Add(x0), // the bias in the sum
					x.Add(h.MatMul(wt)),                                      // a strided batch of two
				}
			}
			want, got := onCPUAndGPU(t, b, build)
			for i := range want {
				rel := signalcmp.RelL2(got[i].F32(), want[i].F32())
				t.Logf("output %d %v: relative L2 %.2g", i, want[i].Shape, rel)
				if !(rel <= tc.tol) {
					t.Errorf("output %d differs from the CPU (relative L2 %g)", i, rel)
				}
			}
			// The batch of two is not merged: its sum is placed over the
			// product's own output, which residualOf's liveness test sees
			// as read after the sum (H100: 2 steps in 2 launches).
			for i := range 2 {
				one := func(g *graph.Graph) []graph.Tensor { return build(g)[i : i+1] }
				if steps, n := launches(t, b, one); n != steps-1 {
					t.Errorf("output %d: %d steps in %d launches: the sum is not in its product", i, steps, n)
				}
			}
		})
	}
}

// TestTransposeCopies: ten transposing copies of different shapes (as a
// Whisper encoder's cross-attention keys and values into the decoder's
// layout) run as two launches of forge_transpose_many (eight launches
// fewer than the program's steps), and each must equal the CPU's copy
// exactly.
func TestTransposeCopies(t *testing.T) {
	b := open(t, kernels.F32)
	build := func(g *graph.Graph) []graph.Tensor {
		var outs []graph.Tensor
		for i := range 10 {
			s := 1500 - 97*i
			x := g.ParamF32(fmt.Sprint("x", i), graph.Shape{s, 384}, ramp(s*384, 0.001*float32(i+1)))
			outs = append(outs, x.Reshape(s, 6, 64).Permute(1, 2, 0).Reshape(6*64*s)) // [S, d] → [H, dh, S]
		}
		return outs
	}
	want, got := onCPUAndGPU(t, b, build)
	for i := range want {
		if w, g := want[i].F32(), got[i].F32(); !slices.Equal(w, g) {
			t.Errorf("copy %d %v differs from the CPU's", i, want[i].Shape)
		}
	}
	if steps, n := launches(t, b, build); n != steps-8 {
		t.Errorf("%d steps in %d launches: the ten copies are not two", steps, n)
	}
}

// launches compiles what build returns and counts its steps and the
// launches of its first run (which runs step by step, before any
// recording).
func launches(t *testing.T, b *cuda.Backend, build func(*graph.Graph) []graph.Tensor) (steps int, n int) {
	t.Helper()
	ctx := context.Background()
	p, err := graph.NewEngine(b).Compile(ctx, build(graph.New())...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := b.Stats().Dispatches
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return p.Steps(), int(b.Stats().Dispatches - before)
}

// TestFreedConstantCopies: with f16 products, a constant weight is read
// through a half copy the backend keeps. With no plan cache the engine
// frees each program's constants when it closes, and the next constant
// of the same size is likely to get the same address: its product must
// not read the old constant's copy.
func TestFreedConstantCopies(t *testing.T) {
	b := open(t, kernels.F16)
	ctx := context.Background()
	eng, ref := graph.NewEngine(b, graph.WithPlanCache(0)), graph.NewEngine(cpu.New())
	product := func(e *graph.Engine, w []float32) []float32 {
		g := graph.New()
		x := g.InputF32("x", graph.Shape{64, 256}, ramp(64*256, 0.02))
		vals, err := e.Eval(ctx, x.MatMul(g.ConstF32(graph.Shape{256, 256}, w)))
		if err != nil {
			t.Fatal(err)
		}
		return vals[0].F32()
	}
	for i, scale := range []float32{0.01, -0.03, 0.02} {
		w := ramp(256*256, scale)
		got, want := product(eng, w), product(ref, w)
		if rel := signalcmp.RelL2(got, want); !(rel <= 2e-3) {
			t.Errorf("weight %d: relative L2 %.2g against the CPU, want ≤ 2e-3 (an earlier weight's copy read?)", i, rel)
		}
		if c := eng.Stats().Constants; c != 0 {
			t.Errorf("weight %d: %d constants held with no plan cached", i, c)
		}
	}
}
