package graph_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

func randF32(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64() * 0.1)
	}
	return out
}

// benchProgram compiles outs once and times Run.
func benchProgram(b *testing.B, e *graph.Engine, flops float64, inputData [][]byte, outs ...graph.Tensor) {
	ctx := context.Background()
	prog, err := e.Compile(ctx, outs...)
	if err != nil {
		b.Fatal(err)
	}
	defer prog.Close()
	// Inputs made with data are fed once; params would be folded away.
	for k := 0; k < prog.NumInputs(); k++ {
		if err := prog.SetIndex(ctx, k, inputData[k]); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := prog.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if flops > 0 {
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
}

func f32b(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// BenchmarkConv1dWhisper is Whisper tiny's first encoder convolution:
// 80 mel bins → 384 channels, kernel 3, padding 1, over 3000 frames.
func BenchmarkConv1dWhisper(b *testing.B) {
	e := graph.NewEngine(cpu.New())
	g := graph.New()
	xd := randF32(80*3000, 1)
	x := g.InputF32("mel", graph.Shape{1, 80, 3000}, xd)
	w := g.ParamF32("w", graph.Shape{384, 80, 3}, randF32(384*80*3, 2))
	bias := g.ParamF32("b", graph.Shape{384}, randF32(384, 3))
	y := x.Conv1d(w, bias, graph.ConvOpts{Padding: 1})
	benchProgram(b, e, 2*384*80*3*3000, [][]byte{f32b(xd)}, y)
}

// BenchmarkLSTMKokoro is Kokoro's bidirectional LSTM: input 640, hidden
// 256, 100 steps.
func BenchmarkLSTMKokoro(b *testing.B) {
	e := graph.NewEngine(cpu.New())
	g := graph.New()
	xd := randF32(100*640, 4)
	x := g.InputF32("x", graph.Shape{1, 100, 640}, xd)
	dir := func(seed uint64) graph.LSTMWeights {
		return graph.LSTMWeights{
			WIH: g.ParamF32("wih", graph.Shape{1024, 640}, randF32(1024*640, seed)),
			WHH: g.ParamF32("whh", graph.Shape{1024, 256}, randF32(1024*256, seed+1)),
			BIH: g.ParamF32("bih", graph.Shape{1024}, randF32(1024, seed+2)),
			BHH: g.ParamF32("bhh", graph.Shape{1024}, randF32(1024, seed+3)),
		}
	}
	bw := dir(20)
	y, _, _ := x.LSTM(dir(10), &bw, graph.Tensor{}, graph.Tensor{}, true)
	flops := 2.0 * 2 * 100 * (640*1024 + 256*1024)
	benchProgram(b, e, flops, [][]byte{f32b(xd)}, y)
}

// BenchmarkMatMulGraph is the graph path of a 384×1500×384 product (the
// Whisper tiny projection shape), to compare with the raw SGEMM.
func BenchmarkMatMulGraph(b *testing.B) {
	e := graph.NewEngine(cpu.New())
	g := graph.New()
	xd := randF32(1500*384, 5)
	x := g.InputF32("x", graph.Shape{1500, 384}, xd)
	w := g.ParamF32("w", graph.Shape{384, 384}, randF32(384*384, 6))
	benchProgram(b, e, 2*1500*384*384, [][]byte{f32b(xd)}, x.Linear(w, graph.Tensor{}))
}

// BenchmarkFusedGelu times a fused elementwise chain over Whisper tiny's
// MLP activation (1500×1536).
func BenchmarkFusedGelu(b *testing.B) {
	e := graph.NewEngine(cpu.New())
	g := graph.New()
	xd := randF32(1500*1536, 7)
	x := g.InputF32("x", graph.Shape{1500, 1536}, xd)
	bias := g.ParamF32("b", graph.Shape{1536}, randF32(1536, 8))
	benchProgram(b, e, 0, [][]byte{f32b(xd)}, x.Add(bias).Gelu())
	b.ReportMetric(float64(1500*1536)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

// BenchmarkSoftmaxAttention times softmax over Whisper tiny's attention
// scores for one layer (6 heads × 1500 × 1500).
func BenchmarkSoftmaxAttention(b *testing.B) {
	e := graph.NewEngine(cpu.New())
	g := graph.New()
	xd := randF32(6*1500*1500, 9)
	x := g.InputF32("x", graph.Shape{6, 1500, 1500}, xd)
	benchProgram(b, e, 0, [][]byte{f32b(xd)}, x.Softmax(-1))
}

// BenchmarkCompileCached measures rebuilding a small model graph and
// hitting the program cache (what a streaming stage pays per call).
func BenchmarkCompileCached(b *testing.B) {
	e := graph.NewEngine(cpu.New())
	w := randF32(16, 10)
	x := randF32(8, 11)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		g := graph.New()
		p, err := e.Compile(ctx, build(g, w, x))
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// BenchmarkBuildEncoderGraph measures what a model pays on the host before
// its program runs, when it builds its graph per call and hits the program
// cache: four pre-norm transformer layers of Whisper tiny's encoder shapes
// (d 384, 6 heads, 1500 positions), weights as params. Nothing runs.
func BenchmarkBuildEncoderGraph(b *testing.B) {
	const d, heads, n, layers = 384, 6, 1500, 4
	e := graph.NewEngine(cpu.New())
	ctx := context.Background()
	w := func(rows, cols int) []float32 { return randF32(rows*cols, uint64(rows*cols)) }
	wq, wo, w1, w2 := w(3*d, d), w(d, d), w(4*d, d), w(d, 4*d)
	bq, bo, b1, b2, ln := w(1, 3*d), w(1, d), w(1, 4*d), w(1, d), w(1, d)
	x := make([]float32, n*d)
	build := func(g *graph.Graph) graph.Tensor {
		h := g.InputF32("x", graph.Shape{n, d}, x)
		for range layers {
			p := func(name string, s graph.Shape, v []float32) graph.Tensor { return g.ParamF32(name, s, v) }
			y := h.LayerNorm(p("ln.w", graph.Shape{d}, ln), p("ln.b", graph.Shape{d}, ln), 1e-5)
			qkv := y.Linear(p("qkv.w", graph.Shape{3 * d, d}, wq), p("qkv.b", graph.Shape{3 * d}, bq))
			split := func(i int) graph.Tensor {
				return qkv.Slice(1, i*d, (i+1)*d).Reshape(n, heads, d/heads).Permute(1, 0, 2)
			}
			a := split(0).Attention(split(1), split(2), graph.Tensor{}).Permute(1, 0, 2).Reshape(n, d)
			h = h.Add(a.Linear(p("o.w", graph.Shape{d, d}, wo), p("o.b", graph.Shape{d}, bo)))
			y = h.LayerNorm(p("ln2.w", graph.Shape{d}, ln), p("ln2.b", graph.Shape{d}, ln), 1e-5)
			y = y.Linear(p("fc1.w", graph.Shape{4 * d, d}, w1), p("fc1.b", graph.Shape{4 * d}, b1)).Gelu()
			h = h.Add(y.Linear(p("fc2.w", graph.Shape{d, 4 * d}, w2), p("fc2.b", graph.Shape{d}, b2)))
		}
		return h
	}
	for i := 0; i < b.N+1; i++ {
		if i == 1 {
			b.ResetTimer() // the first call compiles and folds
		}
		g := graph.New()
		p, err := e.Compile(ctx, build(g))
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
