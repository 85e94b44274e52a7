package cuda_test

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/graph"
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
