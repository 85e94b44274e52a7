package graph_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestPartitionRandomPrograms compiles random programs (elementwise chains
// over strided and broadcast views, fixed kernels, concatenations into
// windows, state assignments and in-place updates, view outputs) for a
// device that supports a random subset of ops, and requires every output
// and state to equal the CPU backend's bit for bit: the same CPU kernels
// compute each step, so any difference is a transfer the partition got
// wrong.
func TestPartitionRandomPrograms(t *testing.T) {
	ctx := context.Background()
	var transfers int64
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 99))
		ops := randomOpSet(rng)
		want := runRandomProgram(t, ctx, graph.NewEngine(cpu.New()), seed)
		dev := kerneltest.NewPartial(ops...)
		eng := graph.NewEngine(dev, graph.WithHost(cpu.New()))
		got := runRandomProgram(t, ctx, eng, seed)
		transfers += eng.Stats().Transfers
		for k := range want {
			if !slices.Equal(got[k], want[k]) {
				t.Fatalf("seed %d, device ops %v: result %d differs from the CPU backend's", seed, ops, k)
			}
		}
	}
	t.Logf("%d copies between device and host", transfers)
	if transfers == 0 {
		t.Error("no program was partitioned")
	}
}

// randomOpSet picks the ops a device supports. Softmax and the norms come
// with reductions and fused steps, or the engine would lower them into
// those (other arithmetic, not bit for bit the fixed kernel).
func randomOpSet(rng *rand.Rand) []kernels.Op {
	ops := []kernels.Op{kernels.OpInvalid} // supports nothing unless more are added
	for _, op := range kerneltest.AllOps() {
		if rng.IntN(2) == 0 {
			ops = append(ops, op)
		}
	}
	if slices.Contains(ops, kernels.OpFused) && slices.Contains(ops, kernels.OpReduce) {
		ops = append(ops, kernels.OpSoftmax, kernels.OpLayerNorm, kernels.OpGroupNorm)
	}
	return ops
}

// runRandomProgram builds program seed on e, runs it twice (states carry
// over) and returns the raw bytes of its outputs and states.
func runRandomProgram(t *testing.T, ctx context.Context, e *graph.Engine, seed uint64) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	const B, N, D = 3, 4, 6
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	xData, xtData, wData, cwData := vals(B*N*D), vals(B*D*N), vals(D*D), vals(N*N*3)
	lstmW := [][]float32{vals(4 * D * D), vals(4 * D * D), vals(4 * D), vals(4 * D)}
	cache, err := e.NewState("cache", graph.F32, graph.Shape{B, 2 * N, D})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	acc, err := e.NewState("acc", graph.F32, graph.Shape{B, N, D})
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	var out [][]byte
	for run := range 2 {
		g := graph.New()
		x := g.InputF32("x", graph.Shape{B, N, D}, xData)
		xt := g.InputF32("xt", graph.Shape{B, D, N}, xtData).Permute(0, 2, 1) // strided
		w := g.ParamF32("w", graph.Shape{D, D}, wData)
		pool := []graph.Tensor{x, xt, g.ReadState(acc)}
		pick := func() graph.Tensor { return pool[rng.IntN(len(pool))] }
		updated := false
		for range 4 + rng.IntN(14) {
			a := pick()
			var y graph.Tensor
			switch rng.IntN(21) {
			case 0:
				y = a.Tanh().MulScalar(1.5)
			case 1:
				y = a.Add(pick().Slice(1, 1, 2)) // broadcast along axis 1
			case 2:
				y = a.MatMul(w)
			case 3:
				y = a.Softmax(rng.IntN(3))
			case 4:
				y = a.LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5)
			case 5:
				y = a.Sub(a.Mean(true, 1)) // a reduction broadcast back
			case 6:
				y = a.Cumsum(2, rng.IntN(2) == 0, rng.IntN(2) == 0)
			case 7:
				y = a.Pad1d(kernels.PadReflect, 2, 1).Slice(2, 1, 1+D) // a view at an offset into a padded temp
			case 8:
				y = graph.Concat(1, a.SliceStep(1, 0, N, 2), pick().SliceStep(1, 1, N, 2)) // windows of one buffer
			case 9:
				perm := g.ConstI64(graph.Shape{D}, []int64{5, 0, 3, 1, 4, 2})
				y = a.Gather(2, perm)
			case 10:
				y = a.Conv1d(g.ParamF32("cw", graph.Shape{N, N, 3}, cwData), graph.Tensor{}, graph.ConvOpts{Padding: 1})
			case 11:
				y = a.Attention(pick(), pick(), graph.Tensor{})
			case 12:
				y = graph.Where(a.Gt(pick()), a, pick().Neg())
			case 14: // a weight-only subgraph: folded on the engine at compile time
				y = a.MatMul(w.Tanh().MatMul(w))
			case 15: // a multi-output kernel
				yq, sc, zp := a.DynamicQuantize()
				y = yq.Cast(graph.F32).Sub(zp.Cast(graph.F32)).Mul(sc)
			case 16:
				fw := graph.LSTMWeights{WIH: g.ParamF32("wih", graph.Shape{4 * D, D}, lstmW[0]), WHH: g.ParamF32("whh", graph.Shape{4 * D, D}, lstmW[1]),
					BIH: g.ParamF32("bih", graph.Shape{4 * D}, lstmW[2]), BHH: g.ParamF32("bhh", graph.Shape{4 * D}, lstmW[3])}
				ys, hN, _ := a.LSTM(fw, nil, graph.Tensor{}, graph.Tensor{}, true)
				y = ys.Add(hN.Permute(1, 0, 2))
			case 17: // integer results: an argmax, a cast back
				y = a.Add(a.ArgMax(1, true).Cast(graph.F32))
			case 18: // indices and counts known only at run time
				idx := g.InputI64("idx", graph.Shape{D}, []int64{int64(run), 5, 1, 0, 4, 2})
				cnt := g.InputI64("cnt", graph.Shape{N}, []int64{1, 2, 0, 1})
				y = a.Gather(2, idx).RepeatInterleave(cnt, 1, N)
			case 19: // a reshape of a strided view (a copy), and back
				y = a.Permute(0, 2, 1).Reshape(B, N*D).Reshape(B, D, N).Permute(0, 2, 1)
			case 20: // an expanded row
				y = a.Sum(true, 2).Expand(graph.Shape{B, N, D})
			case 13:
				if updated {
					continue
				}
				// Append at a position known only at run time, read the
				// written rows back in the same program.
				pos := g.InputI64("pos", graph.Shape{1}, []int64{int64(run * N)})
				y = g.UpdateState(cache, a, 1, pos).Slice(1, run*N, run*N+N)
				updated = true
			}
			pool = append(pool, y)
		}
		var outs []graph.Tensor
		for range 1 + rng.IntN(4) {
			o := pick()
			switch rng.IntN(4) {
			case 0:
				o = o.Permute(2, 0, 1) // an output that is a strided view
			case 1:
				o = o.Slice(2, 1, 4).Expand(graph.Shape{2, B, N, 3}) // a broadcast one
			}
			outs = append(outs, o)
		}
		if rng.IntN(3) == 0 {
			outs = append(outs, outs[0]) // the same value twice
		}
		// A window of a state, read by the same program.
		outs = append(outs, g.Assign(acc, pick().MulScalar(0.5).Slice(1, 0, 2), 1, rng.IntN(3)))
		vs, err := e.Eval(ctx, outs...)
		if err != nil {
			t.Fatalf("seed %d run %d: %v", seed, run, err)
		}
		for _, v := range vs {
			if v != nil {
				out = append(out, v.Data)
			}
		}
	}
	for _, s := range []*graph.State{cache, acc} {
		b := make([]byte, s.Shape().Len()*4)
		if err := s.Read(ctx, b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestBatchedInputs: a program's inputs go to a queue that can make
// several writes at once (kernels.BatchWriter) in one WriteBatch, and the
// result is the one of writing them one by one; an input of the wrong size
// is refused before anything is written.
func TestBatchedInputs(t *testing.T) {
	ctx := context.Background()
	dev := kerneltest.NewPartial(kerneltest.AllOps()...)
	eng := graph.NewEngine(dev, graph.WithHost(cpu.New()))
	build := func(c []float32) (*graph.Graph, graph.Tensor) {
		g := graph.New()
		a := g.InputF32("a", graph.Shape{3}, []float32{1, 2, 3})
		b := g.InputF32("b", graph.Shape{3}, []float32{10, 20, 30})
		x := g.InputF32("c", graph.Shape{3}, c)
		return g, a.Add(b).Mul(x)
	}
	_, y := build([]float32{1, -1, 2})
	vals, err := eng.Eval(ctx, y)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := vals[0].F32(), []float32{11, -22, 66}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if c := dev.Counts(); c.Batches != 1 || c.Writes != 3 || c.WriteBytes != 36 {
		t.Errorf("%d batches of %d writes (%d bytes), want 1 of 3 (36 bytes)", c.Batches, c.Writes, c.WriteBytes)
	}
	before := dev.Counts()
	_, y = build([]float32{1, 2})
	if _, err := eng.Eval(ctx, y); err == nil {
		t.Error("an input of 2 values for a shape of 3 was accepted")
	}
	if c := dev.Counts(); c.Writes != before.Writes {
		t.Errorf("%d writes made for a program whose input was refused", c.Writes-before.Writes)
	}
}

// TestInputParts: an input bound in parts reads as their concatenation,
// on a queue that writes them in one batch (the double) and on one that
// writes them one by one (the CPU's); parts that do not fill the input's
// shape exactly are refused when the graph is built.
func TestInputParts(t *testing.T) {
	ctx := context.Background()
	dev := kerneltest.NewPartial(kerneltest.AllOps()...)
	for _, eng := range []*graph.Engine{graph.NewEngine(dev, graph.WithHost(cpu.New())), graph.NewEngine(cpu.New())} {
		g := graph.New()
		x := g.InputF32Parts("x", graph.Shape{3, 2}, [][]float32{{1, 2}, {}, {3, 4, 5, 6}})
		vals, err := eng.Eval(ctx, x.MulScalar(2))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := vals[0].F32(), []float32{2, 4, 6, 8, 10, 12}; !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", eng.Backend().Name(), got, want)
		}
	}
	if c := dev.Counts(); c.Batches != 1 || c.Writes != 3 || c.WriteBytes != 24 {
		t.Errorf("%d batches of %d writes (%d bytes), want 1 of 3 (24 bytes)", c.Batches, c.Writes, c.WriteBytes)
	}
	g := graph.New()
	if x := g.InputF32Parts("x", graph.Shape{3, 2}, [][]float32{{1, 2}, {3, 4, 5}}); x.Err() == nil {
		t.Error("parts of 5 values accepted for an input of 6")
	}
}
