package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
)

func pass(_ context.Context, b []float32) ([]float32, error) { return b, nil }

// BenchmarkPassThrough4 measures the per-frame cost of the machinery: a
// source, four pass-through map stages and a sink, every hop a bounded
// channel with metrics recorded. One b.N is one frame.
func BenchmarkPassThrough4(b *testing.B) {
	for _, buf := range []int{2, pipeline.DefaultBufferSize, 64} {
		b.Run(fmt.Sprintf("buf=%d", buf), func(b *testing.B) {
			payload := make([]float32, 512)
			n := b.N
			i := 0
			src := stage.FromFunc("src", func(context.Context) ([]float32, error) {
				if i == n {
					return nil, io.EOF
				}
				i++
				return payload, nil
			})
			p := pipeline.New("bench", pipeline.DefaultBuffer(buf))
			x := pipeline.From(p, src)
			for _, name := range []string{"s1", "s2", "s3", "s4"} {
				x = pipeline.Then(x, stage.Map(name, pass))
			}
			pipeline.To(x, stage.Discard[[]float32]("sink"))
			b.ReportAllocs()
			b.ResetTimer()
			if err := p.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if s, _ := p.Metrics().Stage("sink"); s.FramesIn != int64(n) {
				b.Fatalf("sink saw %d frames, want %d", s.FramesIn, n)
			}
		})
	}
}
