package graph_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestAttention compares the fused kernel with the same arithmetic written
// as MatMul, Add, Softmax, MatMul, on the layouts models feed it: heads
// split off [s, heads·d] projections (strided), keys given transposed,
// keys and values shared across a batch (broadcast), a causal mask, and
// sizes that split into several query blocks.
func TestAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const H, n, s, d = 3, 70, 2000, 16 // 2000 keys: 65-row query blocks, so two per head
	h := newHarness(t)
	g := h.g
	heads := func(x graph.Tensor, len int) graph.Tensor { return x.Reshape(len, H, d).Permute(1, 0, 2) }
	q := heads(h.in(kerneltest.RandND(rng, -1, 1, n, H*d).Round32()), n)
	k := heads(g.InputF32("k", graph.Shape{s, H * d}, kerneltest.RandND(rng, -1, 1, s, H*d).Round32().F32()), s)
	v := heads(g.InputF32("v", graph.Shape{s, H * d}, kerneltest.RandND(rng, -1, 1, s, H*d).Round32().F32()), s)
	kT := g.InputF32("kT", graph.Shape{H, d, s}, kerneltest.RandND(rng, -1, 1, H, d, s).Round32().F32())
	qb := g.InputF32("qb", graph.Shape{2, H, 1, d}, kerneltest.RandND(rng, -1, 1, 2, H, 1, d).Round32().F32())
	rows := g.Arange(float64(s-n), 1, n, graph.F32).Reshape(n, 1)
	cols := g.Arange(0, 1, s, graph.F32).Reshape(1, s)
	mask := graph.Where(cols.Le(rows), g.Scalar(0, graph.F32), g.Scalar(-3.4e38, graph.F32))
	ref := func(q, kT, v, mask graph.Tensor) graph.Tensor {
		w := q.MatMul(kT)
		if mask.Graph() != nil {
			w = w.Add(mask)
		}
		return w.Softmax(-1).MatMul(v)
	}
	cases := []struct {
		name     string
		got, ref graph.Tensor
	}{
		{"strided heads", q.Attention(k, v, graph.Tensor{}), ref(q, k.T(), v, graph.Tensor{})},
		{"causal mask", q.Attention(k, v, mask), ref(q, k.T(), v, mask)},
		{"transposed keys", q.Attention(kT.T(), v, graph.Tensor{}), ref(q, kT, v, graph.Tensor{})},
		{"broadcast batch", qb.Attention(k, v, graph.Tensor{}), ref(qb, k.T(), v, graph.Tensor{})},
	}
	var outs []graph.Tensor
	for _, c := range cases {
		outs = append(outs, c.got, c.ref)
	}
	vals := h.eval(outs...)
	for i, c := range cases {
		got, want := vals[2*i], vals[2*i+1]
		if !got.Shape.Equal(want.Shape) {
			t.Fatalf("%s: shape %v, want %v", c.name, got.Shape, want.Shape)
		}
		a, b := got.F32(), want.F32()
		worst := 0.0
		for j := range b {
			worst = max(worst, math.Abs(float64(a[j])-float64(b[j])))
		}
		if worst > 1e-5 {
			t.Errorf("%s: max |fused − unfused| = %.3g", c.name, worst)
		}
	}
}

func TestAttentionRejectsBadOperands(t *testing.T) {
	g := graph.New()
	q := g.Input("q", graph.F32, graph.Shape{4, 8})
	k := g.Input("k", graph.F32, graph.Shape{5, 8})
	v := g.Input("v", graph.F32, graph.Shape{5, 3})
	for name, y := range map[string]graph.Tensor{
		"key width":  q.Attention(g.Input("k2", graph.F32, graph.Shape{5, 7}), v, graph.Tensor{}),
		"value rows": q.Attention(k, g.Input("v2", graph.F32, graph.Shape{6, 3}), graph.Tensor{}),
		"mask shape": q.Attention(k, v, g.Input("m", graph.F32, graph.Shape{4, 4})),
		"batch":      g.Input("q3", graph.F32, graph.Shape{2, 4, 8}).Attention(g.Input("k3", graph.F32, graph.Shape{3, 5, 8}), v, graph.Tensor{}),
		"rank":       g.Input("q1", graph.F32, graph.Shape{8}).Attention(k, v, graph.Tensor{}),
	} {
		if y.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
