package listen

import (
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// standIn is a CPU backend that calls itself something else, standing in
// for a GPU: CI has none.
type standIn struct{ kernels.Backend }

func (standIn) Name() string { return "gpu-stand-in" }

// TestVADEngine: a Transcriber's VAD shares a CPU engine and gets an
// engine of its own on the CPU beside any other device.
func TestVADEngine(t *testing.T) {
	cases := []struct {
		name  string
		eng   *graph.Engine
		share bool
	}{
		{"cpu", graph.NewEngine(cpu.New()), true},
		{"another device", graph.NewEngine(standIn{cpu.New()}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := vadEngine(c.eng)
			if err != nil {
				t.Fatal(err)
			}
			if (got == c.eng) != c.share {
				t.Errorf("VAD engine shared with the models: %v, want %v", got == c.eng, c.share)
			}
			if n := got.Backend().Name(); n != "cpu" {
				t.Errorf("VAD on %q, want the CPU", n)
			}
		})
	}
}
