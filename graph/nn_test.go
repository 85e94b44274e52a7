package graph_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

func TestReductions(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, axes := range [][]int{{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}} {
		for _, keep := range []bool{false, true} {
			a := kerneltest.RandND(rng, -3, 3, 3, 4, 50).Round32()
			h := newHarness(t)
			x := h.in(a)
			vals := h.eval(x.Sum(keep, axes...), x.Mean(keep, axes...), x.Max(keep, axes...), x.Min(keep, axes...),
				x.Var(keep, 1, axes...), x.Var(keep, 0, axes...), x.Prod(keep, axes...))
			closeTo(t, "sum", vals[0], kerneltest.Reduce(a, axes, keep, kerneltest.Sum), 1e-6)
			closeTo(t, "mean", vals[1], kerneltest.Reduce(a, axes, keep, kerneltest.Mean), 1e-6)
			closeTo(t, "max", vals[2], kerneltest.Reduce(a, axes, keep, kerneltest.Max), 0)
			closeTo(t, "min", vals[3], kerneltest.Reduce(a, axes, keep, kerneltest.Min), 0)
			closeTo(t, "var", vals[4], kerneltest.Reduce(a, axes, keep, kerneltest.Variance(1)), 1e-6)
			closeTo(t, "var0", vals[5], kerneltest.Reduce(a, axes, keep, kerneltest.Variance(0)), 1e-6)
			if len(axes) == 1 && axes[0] < 2 {
				closeTo(t, "prod", vals[6], kerneltest.Reduce(a, axes, keep, kerneltest.Prod), 1e-5)
			}
		}
	}
	// argmax/argmin on a transposed view, with ties resolved to the first.
	a := kerneltest.RandND(rng, -3, 3, 6, 9).Round32()
	a.Data[3*9+2] = 10
	a.Data[3*9+5] = 10
	h := newHarness(t)
	x := h.in(a)
	vals := h.eval(x.ArgMax(1, false), x.T().ArgMax(0, true), x.ArgMin(0, false))
	closeTo(t, "argmax", vals[0], kerneltest.Reduce(a, []int{1}, false, kerneltest.ArgMax), 0)
	if got := vals[0].I64()[3]; got != 2 {
		t.Errorf("argmax tie: got %d, want the first (2)", got)
	}
	closeTo(t, "argmax of transpose", vals[1], kerneltest.Reduce(a, []int{1}, true, kerneltest.ArgMax).Reshape(1, 6), 0)
	closeTo(t, "argmin", vals[2], kerneltest.Reduce(a, []int{0}, false, kerneltest.ArgMin), 0)
}

func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a := kerneltest.RandND(rng, -20, 20, 3, 5, 7).Round32()
	for axis := 0; axis < 3; axis++ {
		h := newHarness(t)
		x := h.in(a)
		vals := h.eval(x.Softmax(axis), x.LogSoftmax(axis))
		want, wantLog := kerneltest.Softmax(a, axis, false), kerneltest.Softmax(a, axis, true)
		closeTo(t, "softmax", vals[0], want, 1e-6)
		closeTo(t, "log_softmax", vals[1], wantLog, 1e-6)
	}
}

func TestNorms(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	x := kerneltest.RandND(rng, -2, 5, 2, 6, 40).Round32()
	w := kerneltest.RandND(rng, 0.5, 1.5, 40).Round32()
	b := kerneltest.RandND(rng, -1, 1, 40).Round32()
	cw := kerneltest.RandND(rng, 0.5, 1.5, 6).Round32()
	cb := kerneltest.RandND(rng, -1, 1, 6).Round32()
	const eps = 1e-5
	ln := kerneltest.LayerNorm(x, w, b, 2, eps)
	gn := kerneltest.GroupNorm(x, 3, cw, cb, eps)
	in := kerneltest.GroupNorm(x, 6, kerneltest.ND{}, kerneltest.ND{}, eps) // instance norm: a group per channel
	h := newHarness(t)
	xt, wt, bt, cwt, cbt := h.in(x), h.in(w), h.in(b), h.in(cw), h.in(cb)
	vals := h.eval(xt.LayerNorm(wt, bt, eps), xt.GroupNorm(3, cwt, cbt, eps), xt.InstanceNorm(graph.Tensor{}, graph.Tensor{}, eps))
	closeTo(t, "layer_norm", vals[0], ln, 1e-5)
	closeTo(t, "group_norm", vals[1], gn, 1e-5)
	closeTo(t, "instance_norm", vals[2], in, 1e-5)
}

func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct {
		batch   []int
		m, k, n int
	}{{nil, 1, 1, 1}, {nil, 5, 7, 3}, {nil, 64, 100, 33}, {[]int{3}, 4, 5, 6}, {[]int{2, 3}, 17, 9, 1}, {nil, 1, 384, 51}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				ash := append(append([]int(nil), c.batch...), c.m, c.k)
				bsh := append(append([]int(nil), c.batch...), c.k, c.n)
				if ta {
					ash = append(append([]int(nil), c.batch...), c.k, c.m)
				}
				if tb {
					bsh = append(append([]int(nil), c.batch...), c.n, c.k)
				}
				a, b := kerneltest.RandND(rng, -1, 1, ash...).Round32(), kerneltest.RandND(rng, -1, 1, bsh...).Round32()
				h := newHarness(t)
				x, y := h.in(a), h.in(b)
				if ta {
					x = x.T()
				}
				if tb {
					y = y.T()
				}
				closeTo(t, "matmul", h.eval(x.MatMul(y))[0], kerneltest.MatMul(a, b, ta, tb), 1e-5)
			}
		}
	}
	// Batch broadcasting, 1-D operands, Linear with bias.
	a, b := kerneltest.RandND(rng, -1, 1, 2, 1, 4, 5).Round32(), kerneltest.RandND(rng, -1, 1, 3, 5, 2).Round32()
	h := newHarness(t)
	x, y := h.in(a), h.in(b)
	v := h.eval(x.MatMul(y))[0]
	if !v.Shape.Equal(graph.Shape{2, 3, 4, 2}) {
		t.Fatalf("broadcast matmul shape %v", v.Shape)
	}
	got := v.Float64s()
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			aa := kerneltest.ND{Shape: []int{4, 5}, Data: a.Data[i*20 : (i+1)*20]}
			bb := kerneltest.ND{Shape: []int{5, 2}, Data: b.Data[j*10 : (j+1)*10]}
			want := kerneltest.MatMul(aa, bb, false, false)
			for k, w := range want.Data {
				if math.Abs(got[(i*3+j)*8+k]-w) > 1e-5 {
					t.Fatalf("broadcast matmul [%d,%d][%d] = %v want %v", i, j, k, got[(i*3+j)*8+k], w)
				}
			}
		}
	}
	vec := kerneltest.RandND(rng, -1, 1, 5).Round32()
	m := kerneltest.RandND(rng, -1, 1, 5, 3).Round32()
	h = newHarness(t)
	vals := h.eval(h.in(vec).MatMul(h.in(m)), h.in(m).T().MatMul(h.in(vec)))
	want := kerneltest.MatMul(vec.Reshape(1, 5), m, false, false).Reshape(3)
	closeTo(t, "vector·matrix", vals[0], want, 1e-6)
	closeTo(t, "matrixᵀ·vector", vals[1], want, 1e-6)

	xin := kerneltest.RandND(rng, -1, 1, 2, 3, 8).Round32()
	w := kerneltest.RandND(rng, -1, 1, 4, 8).Round32()
	bias := kerneltest.RandND(rng, -1, 1, 4).Round32()
	h = newHarness(t)
	lin := h.eval(h.in(xin).Linear(h.in(w), h.in(bias)))[0]
	wantLin := kerneltest.MatMul(xin.Reshape(6, 8), w, false, true)
	for i := range wantLin.Data {
		wantLin.Data[i] += bias.Data[i%4]
	}
	closeTo(t, "linear", lin, wantLin.Reshape(2, 3, 4), 1e-6)
}
