//go:build !race

package pipeline_test

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
)

// Steady state allocates nothing per frame: push a frame through a running
// four-stage pipeline and pull it out, many times, counting every heap
// allocation in the process (all goroutines). Excluded under -race, whose
// instrumentation allocates.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	p := pipeline.New("allocs")
	in, x := pipeline.Input[[]float32](p, "in")
	for _, name := range []string{"s1", "s2", "s3", "s4"} {
		x = pipeline.Then(x, stage.Map(name, pass))
	}
	out := pipeline.Output(x, "out")
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		if err := p.Wait(); err != nil {
			t.Error(err)
		}
	}()
	payload := make([]float32, 512)
	roundTrip := func() {
		if err := in.Send(ctx, stage.Frame[[]float32]{Offset: 1, Rate: 16000, Payload: payload}); err != nil {
			t.Fatal(err)
		}
		if _, err := out.Recv(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		roundTrip()
	}
	if n := testing.AllocsPerRun(2000, roundTrip); n != 0 {
		t.Errorf("%v allocations per frame in steady state, want 0", n)
	}
}
