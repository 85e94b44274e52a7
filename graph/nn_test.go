package graph_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tensorforge/forge/graph"
)

// refReduce reduces a over axes with f applied to each group's values.
func refReduce(a nd, axes []int, keep bool, f func([]float64) float64) nd {
	var oshape, kshape []int
	for d, n := range a.shape {
		if slices.Contains(axes, d) {
			kshape = append(kshape, 1)
			if keep {
				oshape = append(oshape, 1)
			}
		} else {
			kshape = append(kshape, n)
			oshape = append(oshape, n)
		}
	}
	groups := map[int][]float64{}
	kst := newND(kshape...).strides()
	for i, v := range a.data {
		idx := unravel(i, a.shape)
		p := 0
		for d := range idx {
			if !slices.Contains(axes, d) {
				p += idx[d] * kst[d]
			}
		}
		groups[p] = append(groups[p], v)
	}
	out := newND(oshape...)
	for i := range out.data {
		out.data[i] = f(groups[i])
	}
	return out
}

func TestReductions(t *testing.T) {
	sum := func(x []float64) float64 {
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s
	}
	mean := func(x []float64) float64 { return sum(x) / float64(len(x)) }
	argmax := func(x []float64) float64 {
		b := 0
		for i, v := range x {
			if v > x[b] {
				b = i
			}
		}
		return float64(b)
	}
	argmin := func(x []float64) float64 {
		b := 0
		for i, v := range x {
			if v < x[b] {
				b = i
			}
		}
		return float64(b)
	}
	variance := func(corr int) func([]float64) float64 {
		return func(x []float64) float64 {
			m := mean(x)
			s := 0.0
			for _, v := range x {
				s += (v - m) * (v - m)
			}
			return s / float64(len(x)-corr)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, axes := range [][]int{{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}} {
		for _, keep := range []bool{false, true} {
			a := randND(rng, -3, 3, 3, 4, 50).round32()
			h := newHarness(t)
			x := h.in(a)
			vals := h.eval(x.Sum(keep, axes...), x.Mean(keep, axes...), x.Max(keep, axes...), x.Min(keep, axes...),
				x.Var(keep, 1, axes...), x.Var(keep, 0, axes...), x.Prod(keep, axes...))
			closeTo(t, "sum", vals[0], refReduce(a, axes, keep, sum), 1e-6)
			closeTo(t, "mean", vals[1], refReduce(a, axes, keep, mean), 1e-6)
			closeTo(t, "max", vals[2], refReduce(a, axes, keep, slices.Max[[]float64]), 0)
			closeTo(t, "min", vals[3], refReduce(a, axes, keep, slices.Min[[]float64]), 0)
			closeTo(t, "var", vals[4], refReduce(a, axes, keep, variance(1)), 1e-6)
			closeTo(t, "var0", vals[5], refReduce(a, axes, keep, variance(0)), 1e-6)
			prod := func(x []float64) float64 {
				p := 1.0
				for _, v := range x {
					p *= v
				}
				return p
			}
			if len(axes) == 1 && axes[0] < 2 {
				closeTo(t, "prod", vals[6], refReduce(a, axes, keep, prod), 1e-5)
			}
		}
	}
	// argmax/argmin on a transposed view, with ties resolved to the first.
	a := randND(rng, -3, 3, 6, 9).round32()
	a.data[3*9+2] = 10
	a.data[3*9+5] = 10
	h := newHarness(t)
	x := h.in(a)
	vals := h.eval(x.ArgMax(1, false), x.T().ArgMax(0, true), x.ArgMin(0, false))
	closeTo(t, "argmax", vals[0], refReduce(a, []int{1}, false, argmax), 0)
	if got := vals[0].I64()[3]; got != 2 {
		t.Errorf("argmax tie: got %d, want the first (2)", got)
	}
	closeTo(t, "argmax of transpose", vals[1], refReduce(a, []int{1}, true, argmax).reshape(1, 6), 0)
	closeTo(t, "argmin", vals[2], refReduce(a, []int{0}, false, argmin), 0)
}

func (a nd) reshape(shape ...int) nd { a.shape = shape; return a }

func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a := randND(rng, -20, 20, 3, 5, 7).round32()
	for axis := 0; axis < 3; axis++ {
		h := newHarness(t)
		x := h.in(a)
		vals := h.eval(x.Softmax(axis), x.LogSoftmax(axis))
		want, wantLog := newND(a.shape...), newND(a.shape...)
		st := a.strides()
		for i := range a.data {
			idx := unravel(i, a.shape)
			base := i - idx[axis]*st[axis]
			mx := math.Inf(-1)
			for j := 0; j < a.shape[axis]; j++ {
				mx = math.Max(mx, a.data[base+j*st[axis]])
			}
			s := 0.0
			for j := 0; j < a.shape[axis]; j++ {
				s += math.Exp(a.data[base+j*st[axis]] - mx)
			}
			want.data[i] = math.Exp(a.data[i]-mx) / s
			wantLog.data[i] = a.data[i] - mx - math.Log(s)
		}
		closeTo(t, "softmax", vals[0], want, 1e-6)
		closeTo(t, "log_softmax", vals[1], wantLog, 1e-6)
	}
}

func TestNorms(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	x := randND(rng, -2, 5, 2, 6, 40).round32()
	w := randND(rng, 0.5, 1.5, 40).round32()
	b := randND(rng, -1, 1, 40).round32()
	cw := randND(rng, 0.5, 1.5, 6).round32()
	cb := randND(rng, -1, 1, 6).round32()
	const eps = 1e-5
	norm := func(vals []float64) (float64, float64) {
		m := 0.0
		for _, v := range vals {
			m += v
		}
		m /= float64(len(vals))
		s := 0.0
		for _, v := range vals {
			s += (v - m) * (v - m)
		}
		return m, 1 / math.Sqrt(s/float64(len(vals))+eps)
	}
	ln := newND(x.shape...)
	for r := 0; r < 12; r++ {
		row := x.data[r*40 : (r+1)*40]
		m, rs := norm(row)
		for j, v := range row {
			ln.data[r*40+j] = (v-m)*rs*w.data[j] + b.data[j]
		}
	}
	gn := newND(x.shape...)
	for n := 0; n < 2; n++ {
		for g := 0; g < 3; g++ {
			base := (n*6 + g*2) * 40
			m, rs := norm(x.data[base : base+80])
			for c := 0; c < 2; c++ {
				ch := g*2 + c
				for j := 0; j < 40; j++ {
					i := (n*6+ch)*40 + j
					gn.data[i] = (x.data[i]-m)*rs*cw.data[ch] + cb.data[ch]
				}
			}
		}
	}
	in := newND(x.shape...)
	for r := 0; r < 12; r++ {
		m, rs := norm(x.data[r*40 : (r+1)*40])
		for j := 0; j < 40; j++ {
			in.data[r*40+j] = (x.data[r*40+j] - m) * rs
		}
	}
	h := newHarness(t)
	xt, wt, bt, cwt, cbt := h.in(x), h.in(w), h.in(b), h.in(cw), h.in(cb)
	vals := h.eval(xt.LayerNorm(wt, bt, eps), xt.GroupNorm(3, cwt, cbt, eps), xt.InstanceNorm(graph.Tensor{}, graph.Tensor{}, eps))
	closeTo(t, "layer_norm", vals[0], ln, 1e-5)
	closeTo(t, "group_norm", vals[1], gn, 1e-5)
	closeTo(t, "instance_norm", vals[2], in, 1e-5)
}

func refMatMul(a, b nd, ta, tb bool) nd {
	// a [B..., M, K] (or [..., K, M] when ta), b likewise; batch dims equal.
	r := len(a.shape)
	M, K := a.shape[r-2], a.shape[r-1]
	if ta {
		M, K = K, M
	}
	N := b.shape[len(b.shape)-1]
	if tb {
		N = b.shape[len(b.shape)-2]
	}
	batch := 1
	for _, d := range a.shape[:r-2] {
		batch *= d
	}
	out := newND(append(append([]int(nil), a.shape[:r-2]...), M, N)...)
	for bi := 0; bi < batch; bi++ {
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				s := 0.0
				for k := 0; k < K; k++ {
					var av, bv float64
					if ta {
						av = a.data[bi*M*K+k*M+i]
					} else {
						av = a.data[bi*M*K+i*K+k]
					}
					if tb {
						bv = b.data[bi*K*N+j*K+k]
					} else {
						bv = b.data[bi*K*N+k*N+j]
					}
					s += av * bv
				}
				out.data[bi*M*N+i*N+j] = s
			}
		}
	}
	return out
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
				a, b := randND(rng, -1, 1, ash...).round32(), randND(rng, -1, 1, bsh...).round32()
				h := newHarness(t)
				x, y := h.in(a), h.in(b)
				if ta {
					x = x.T()
				}
				if tb {
					y = y.T()
				}
				closeTo(t, "matmul", h.eval(x.MatMul(y))[0], refMatMul(a, b, ta, tb), 1e-5)
			}
		}
	}
	// Batch broadcasting, 1-D operands, Linear with bias.
	a, b := randND(rng, -1, 1, 2, 1, 4, 5).round32(), randND(rng, -1, 1, 3, 5, 2).round32()
	h := newHarness(t)
	x, y := h.in(a), h.in(b)
	v := h.eval(x.MatMul(y))[0]
	if !v.Shape.Equal(graph.Shape{2, 3, 4, 2}) {
		t.Fatalf("broadcast matmul shape %v", v.Shape)
	}
	got := v.Float64s()
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			aa := nd{shape: []int{4, 5}, data: a.data[i*20 : (i+1)*20]}
			bb := nd{shape: []int{5, 2}, data: b.data[j*10 : (j+1)*10]}
			want := refMatMul(aa, bb, false, false)
			for k, w := range want.data {
				if math.Abs(got[(i*3+j)*8+k]-w) > 1e-5 {
					t.Fatalf("broadcast matmul [%d,%d][%d] = %v want %v", i, j, k, got[(i*3+j)*8+k], w)
				}
			}
		}
	}
	vec := randND(rng, -1, 1, 5).round32()
	m := randND(rng, -1, 1, 5, 3).round32()
	h = newHarness(t)
	vals := h.eval(h.in(vec).MatMul(h.in(m)), h.in(m).T().MatMul(h.in(vec)))
	want := refMatMul(vec.reshape(1, 5), m, false, false).reshape(3)
	closeTo(t, "vector·matrix", vals[0], want, 1e-6)
	closeTo(t, "matrixᵀ·vector", vals[1], want, 1e-6)

	xin := randND(rng, -1, 1, 2, 3, 8).round32()
	w := randND(rng, -1, 1, 4, 8).round32()
	bias := randND(rng, -1, 1, 4).round32()
	h = newHarness(t)
	lin := h.eval(h.in(xin).Linear(h.in(w), h.in(bias)))[0]
	wantLin := refMatMul(xin.reshape(6, 8), w, false, true)
	for i := range wantLin.data {
		wantLin.data[i] += bias.data[i%4]
	}
	closeTo(t, "linear", lin, wantLin.reshape(2, 3, 4), 1e-6)
}
