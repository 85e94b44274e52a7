package graph_test

import (
	"context"
	"math"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// fuseTol bounds |got − want| / (1 + |want|) between a compiled program
// and the same arithmetic with every intermediate made a program output
// (and so computed by a step of its own). Both compute in float32 in the
// same order, so they agree to the last bit or two.
const fuseTol = 1e-6

// TestLinearBiasAndReshapeFusion: elementwise ops fuse through the
// reshape of a Linear's output back to its input's rank (a Whisper encoder
// layer's fc1 bias → GELU and fc2 bias → residual are one step each), a
// bias add that fuses into nothing is done by the product itself (the
// attention's projections, a 2-D Linear), reshapes that a leaf's strides
// cannot follow still compute right, and every result matches the
// unfused computation.
func TestLinearBiasAndReshapeFusion(t *testing.T) {
	const B, T, D, H = 2, 5, 8, 12 // batch, rows, model width, hidden width
	xs, w1s, b1s, w2s, b2s := randF32(B*T*D, 11), randF32(H*D, 12), randF32(H, 13), randF32(D*H, 14), randF32(D, 15)
	type parts struct{ x, w1, b1, w2, b2 graph.Tensor }
	leaves := func(g *graph.Graph) parts {
		return parts{
			x:  g.InputF32("x", graph.Shape{B, T, D}, xs),
			w1: g.ParamF32("w1", graph.Shape{H, D}, w1s), b1: g.ParamF32("b1", graph.Shape{H}, b1s),
			w2: g.ParamF32("w2", graph.Shape{D, H}, w2s), b2: g.ParamF32("b2", graph.Shape{D}, b2s),
		}
	}
	// unfused is Linear as it was written before: product, add, reshape.
	unfused := func(x, w, b graph.Tensor) graph.Tensor {
		s := x.Shape()
		y := x.Reshape(-1, s[len(s)-1]).MatMul(w.T()).Add(b)
		return y.Reshape(append(s[:len(s)-1].Clone(), w.Dim(0))...)
	}
	for _, c := range []struct {
		name  string
		steps int // compiled steps
		// fused is the graph under test; ref the same arithmetic, each of
		// whose returned tensors is made an output to keep it unfused.
		fused, ref func(p parts) (graph.Tensor, []graph.Tensor)
	}{
		{"linear", 2, // was 3: product, bias add, the output's copy (a reshape of the sum)
			func(p parts) (graph.Tensor, []graph.Tensor) { return p.x.Linear(p.w1, p.b1), nil },
			func(p parts) (graph.Tensor, []graph.Tensor) { return unfused(p.x, p.w1, p.b1), nil }},
		{"2-D linear", 1, // was 2: product, bias add
			func(p parts) (graph.Tensor, []graph.Tensor) { return p.x.Reshape(-1, D).Linear(p.w1, p.b1), nil },
			func(p parts) (graph.Tensor, []graph.Tensor) { return unfused(p.x.Reshape(-1, D), p.w1, p.b1), nil }},
		{"linear, softmax", 2, // was 3: product, bias add, softmax (a kernel: the add fused into nothing)
			func(p parts) (graph.Tensor, []graph.Tensor) { return p.x.Linear(p.w1, p.b1).Softmax(-1), nil },
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := unfused(p.x, p.w1, p.b1)
				return y.Softmax(-1), []graph.Tensor{y}
			}},
		{"batched product, bias add", 1, // was 2: the product of [B, T, D] by a shared weight adds the bias to every row of every batch member
			func(p parts) (graph.Tensor, []graph.Tensor) { return p.x.MatMul(p.w1.T()).Add(p.b1), nil },
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.MatMul(p.w1.T())
				return y.Add(p.b1), []graph.Tensor{y}
			}},
		{"product read twice", 4, // product, bias add, softmax, relu + add: the bias stays an add of its own
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Reshape(-1, D).MatMul(p.w1.T())
				return y.Add(p.b1).Softmax(-1).Add(y.Relu()), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Reshape(-1, D).MatMul(p.w1.T())
				z := y.Add(p.b1)
				s := z.Softmax(-1)
				r := y.Relu()
				return s.Add(r), []graph.Tensor{y, z, s, r}
			}},
		{"linear without bias", 2,
			func(p parts) (graph.Tensor, []graph.Tensor) { return p.x.Linear(p.w1, graph.Tensor{}), nil },
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Reshape(-1, D).MatMul(p.w1.T()).Reshape(B, T, H), nil
			}},
		{"linear of a vector", 2,
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Slice(0, 0, 1).Reshape(-1).Slice(0, 0, D).Linear(p.w1, p.b1), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Slice(0, 0, 1).Reshape(-1).Slice(0, 0, D).MatMul(p.w1.T()).Add(p.b1), nil
			}},
		{"linear, gelu", 2, // was 3: product, bias add, gelu after the reshape; now bias add and gelu are one step
			func(p parts) (graph.Tensor, []graph.Tensor) { return p.x.Linear(p.w1, p.b1).Gelu(), nil },
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := unfused(p.x, p.w1, p.b1)
				return y.Gelu(), []graph.Tensor{y}
			}},
		{"linear, gelu, linear, residual", 4, // was 6: 2 × (product, bias add), gelu and the residual add after the reshapes
			func(p parts) (graph.Tensor, []graph.Tensor) {
				h := p.x.Linear(p.w1, p.b1).Gelu()
				return p.x.Add(h.Linear(p.w2, p.b2)), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				h := unfused(p.x, p.w1, p.b1).Gelu()
				y := unfused(h, p.w2, p.b2)
				return p.x.Add(y), []graph.Tensor{h, y}
			}},
		{"encoder MLP", 5, // was 7: layer norm, 2 × (product, bias add), gelu, residual
			func(p parts) (graph.Tensor, []graph.Tensor) {
				h := p.x.LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5).Linear(p.w1, p.b1).Gelu()
				return p.x.Add(h.Linear(p.w2, p.b2)), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				n := p.x.LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5)
				h := unfused(n, p.w1, p.b1).Gelu()
				y := unfused(h, p.w2, p.b2)
				return p.x.Add(y), []graph.Tensor{n, h, y}
			}},
		{"add, reshape, gelu", 1, // was 2: the reshape split the chain
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Reshape(-1, D).Add(p.b2).Reshape(B, T, D).Gelu(), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Reshape(-1, D).Add(p.b2)
				return y.Reshape(B, T, D).Gelu(), []graph.Tensor{y}
			}},
		{"two reshapes", 1,
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Exp().Reshape(B*T, D).Reshape(B, T*D).Tanh().Reshape(B, T, D).Add(p.x), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				e := p.x.Exp()
				y := e.Reshape(B, T*D).Tanh()
				return y.Reshape(B, T, D).Add(p.x), []graph.Tensor{e, y}
			}},
		{"transposed leaf, merged axes", 2, // its strides cannot be merged: the add is a step of its own
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Permute(0, 2, 1).AddScalar(1).Reshape(-1).Relu(), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Permute(0, 2, 1).AddScalar(1)
				return y.Reshape(-1).Relu(), []graph.Tensor{y}
			}},
		{"broadcast leaf, merged axes", 2, // the bias's stride 0 cannot be merged with the rows'
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Reshape(-1, D).Mul(p.b2).Reshape(-1).Sigmoid(), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Reshape(-1, D).Mul(p.b2)
				return y.Reshape(-1).Sigmoid(), []graph.Tensor{y}
			}},
		{"broadcast leaf, split rows", 1, // the bias's stride 0 survives splitting the rows
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Reshape(-1, D).Mul(p.b2).Reshape(B, T, D).Sigmoid(), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Reshape(-1, D).Mul(p.b2)
				return y.Reshape(B, T, D).Sigmoid(), []graph.Tensor{y}
			}},
		{"transposed leaf inside, dense leaf outside", 2,
			func(p parts) (graph.Tensor, []graph.Tensor) {
				return p.x.Permute(0, 2, 1).Neg().Reshape(B, D*T).Add(p.x.Reshape(B, T*D)), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Permute(0, 2, 1).Neg()
				return y.Reshape(B, D*T).Add(p.x.Reshape(B, T*D)), []graph.Tensor{y}
			}},
		{"reshape used twice", 2, // the exp is not fused: the reshape is read by two consumers
			func(p parts) (graph.Tensor, []graph.Tensor) {
				y := p.x.Reshape(-1, D).Exp().Reshape(B, T, D)
				return y.Tanh().Add(y.Sigmoid()), nil
			},
			func(p parts) (graph.Tensor, []graph.Tensor) {
				e := p.x.Reshape(-1, D).Exp()
				y := e.Reshape(B, T, D)
				return y.Tanh().Add(y.Sigmoid()), []graph.Tensor{e}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			e := graph.NewEngine(cpu.New())
			g := graph.New()
			y, _ := c.fused(leaves(g))
			prog, err := e.Compile(ctx, y)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			if n := prog.Steps(); n != c.steps {
				t.Errorf("%d steps, want %d", n, c.steps)
			}
			got, err := e.Eval(ctx, y)
			if err != nil {
				t.Fatal(err)
			}
			rg := graph.New()
			ry, mids := c.ref(leaves(rg))
			want, err := e.Eval(ctx, append([]graph.Tensor{ry}, mids...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !got[0].Shape.Equal(want[0].Shape) {
				t.Fatalf("shape %v, want %v", got[0].Shape, want[0].Shape)
			}
			within(t, got[0].F32(), want[0].F32(), fuseTol)
		})
	}
}

// within fails t where |got − want| > tol·(1 + |want|), or a value is NaN.
func within(t *testing.T, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	worst := 0.0
	for i := range got {
		d := math.Abs(float64(got[i])-float64(want[i])) / (1 + math.Abs(float64(want[i])))
		if math.IsNaN(d) {
			t.Fatalf("value %d: %v, want %v", i, got[i], want[i])
		}
		worst = max(worst, d)
	}
	if worst > tol {
		t.Errorf("largest difference %.3g relative to 1 + |want|, want ≤ %g", worst, tol)
	}
}

// noBiasProducts is the CPU backend claiming every op but a product with
// a bias: a GPU backend's first day.
type noBiasProducts struct{ *cpu.Backend }

func (noBiasProducts) Supports(s *kernels.Step) bool {
	return s.Op != kernels.OpMatMul || len(s.In) < 3
}

// TestLinearBiasWithoutBiasProducts: on a backend whose product takes no
// bias, a Linear's bias is added by a step of its own on the backend, as
// before (no host steps), with the float32 and the bfloat16 products.
func TestLinearBiasWithoutBiasProducts(t *testing.T) {
	ctx := context.Background()
	xs, ws, bs := randF32(3*7*16, 16), randF32(24*16, 17), randF32(24, 18)
	for _, c := range []struct {
		name  string
		opts  graph.MatMulOpts
		steps int // on the backend without bias products (the CPU's: one fewer)
		f     func(x, w, b graph.Tensor, opts graph.MatMulOpts) graph.Tensor
	}{
		{"2-D linear", graph.MatMulOpts{}, 2, func(x, w, b graph.Tensor, opts graph.MatMulOpts) graph.Tensor {
			return x.Reshape(-1, 16).LinearWith(w, b, opts)
		}},
		{"2-D linear, BF16", graph.MatMulOpts{BF16: true}, 2, func(x, w, b graph.Tensor, opts graph.MatMulOpts) graph.Tensor {
			return x.Reshape(-1, 16).LinearWith(w, b, opts)
		}},
		{"linear, softmax, BF16", graph.MatMulOpts{BF16: true}, 3, func(x, w, b graph.Tensor, opts graph.MatMulOpts) graph.Tensor {
			return x.LinearWith(w, b, opts).Softmax(-1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			build := func(g *graph.Graph) graph.Tensor {
				x := g.InputF32("x", graph.Shape{3, 7, 16}, xs)
				return c.f(x, g.ParamF32("w", graph.Shape{24, 16}, ws), g.ParamF32("b", graph.Shape{24}, bs), c.opts)
			}
			ce := graph.NewEngine(cpu.New())
			want, err := ce.Eval(ctx, build(graph.New()))
			if err != nil {
				t.Fatal(err)
			}
			cprog, err := ce.Compile(ctx, build(graph.New()))
			if err != nil {
				t.Fatal(err)
			}
			defer cprog.Close()
			e := graph.NewEngine(noBiasProducts{cpu.New()}, graph.WithHost(cpu.New()))
			prog, err := e.Compile(ctx, build(graph.New()))
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			if n, h := prog.Steps(), prog.HostSteps(); n != c.steps || h != 0 {
				t.Errorf("%d steps, %d on the host; want %d, none on the host", n, h, c.steps)
			}
			if n := cprog.Steps(); n != c.steps-1 {
				t.Errorf("on the cpu backend: %d steps, want %d (the bias added by the product)", n, c.steps-1)
			}
			got, err := e.Eval(ctx, build(graph.New()))
			if err != nil {
				t.Fatal(err)
			}
			// The bfloat16 product adds the bias in its kernel, the add
			// step to the product's float32 sums: the same float32 sum.
			within(t, got[0].F32(), want[0].F32(), fuseTol)
		})
	}
}
