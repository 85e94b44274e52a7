package pipeline_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
)

// A chain: a source, a 1→N stage, a 1→1 stage and a sink.
func Example() {
	p := pipeline.New("words")
	lines := pipeline.From(p, stage.FromSlice("lines", []string{"hello streaming", "world"}))
	words := pipeline.Then(lines, stage.FlatMap("split", func(_ context.Context, f stage.Frame[string], emit stage.Emit[string]) error {
		for _, w := range strings.Fields(f.Payload) {
			if err := emit(stage.Derive(f, w)); err != nil {
				return err
			}
		}
		return nil
	}))
	upper := pipeline.Then(words, stage.Map("upper", func(_ context.Context, w string) (string, error) {
		return strings.ToUpper(w), nil
	}), pipeline.Buffer(2))
	var got []string
	pipeline.To(upper, stage.Collect("collect", &got))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got)
	s, _ := p.Metrics().Stage("split")
	fmt.Println(s.FramesIn, "in,", s.FramesOut, "out")
	// Output:
	// [HELLO STREAMING WORLD]
	// 2 in, 3 out
}

// The streaming form a service uses: push requests in, pull results out.
func ExampleInput() {
	p := pipeline.New("service")
	in, port := pipeline.Input[int](p, "requests")
	out := pipeline.Output(pipeline.Then(port, stage.Map("square", func(_ context.Context, v int) (int, error) {
		return v * v, nil
	})), "results")
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		defer in.Close()
		for i := 1; i <= 3; i++ {
			if err := in.Send(ctx, stage.Frame[int]{Offset: int64(i), Payload: i}); err != nil {
				return
			}
		}
	}()
	for f, err := range out.All(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(f.Offset, f.Payload)
	}
	fmt.Println(p.Wait())
	// Output:
	// 1 1
	// 2 4
	// 3 9
	// <nil>
}
