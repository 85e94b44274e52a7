package cpu_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// BenchmarkLSTM runs a bidirectional LSTM the size of Kokoro's (640 inputs,
// 256 hidden, constant weights) over a 190-token sentence and over the 429
// frames of its prosody: the steps' h·W_hhᵀ products are sequential, so
// they set the time more than the input projection does.
func BenchmarkLSTM(b *testing.B) {
	const I, H = 640, 256
	r := rand.New(rand.NewPCG(11, 12))
	ws := [2][4][]float32{}
	for d := range ws {
		ws[d] = [4][]float32{randF32(r, 4*H*I), randF32(r, 4*H*H), randF32(r, 4*H), randF32(r, 4*H)}
	}
	eng := graph.NewEngine(cpu.New())
	for _, T := range []int{190, 429} {
		x := randF32(r, T*I)
		b.Run(fmt.Sprint("T", T), func(b *testing.B) {
			for range b.N {
				g := graph.New()
				dir := func(d int) graph.LSTMWeights {
					w := func(name string, k int, shape graph.Shape) graph.Tensor {
						return g.Param(fmt.Sprint(name, d), graph.F32, shape, bytesOf(ws[d][k]))
					}
					return graph.LSTMWeights{WIH: w("wih", 0, graph.Shape{4 * H, I}), WHH: w("whh", 1, graph.Shape{4 * H, H}),
						BIH: w("bih", 2, graph.Shape{4 * H}), BHH: w("bhh", 3, graph.Shape{4 * H})}
				}
				bw := dir(1)
				y, _, _ := g.InputF32("x", graph.Shape{1, T, I}, x).LSTM(dir(0), &bw, graph.Tensor{}, graph.Tensor{}, true)
				if _, err := eng.Eval(context.Background(), y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
