package vad_test

import (
	"math"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
	"github.com/tensorforge/forge/models/vad"
)

// TestPartialBackend runs Silero VAD over a real clip on an engine whose
// backend supports only fused expressions and matrix products (a new
// device's first day): every other step runs on the host with copies
// between the two. The probabilities must equal the CPU backend's bit for
// bit, since the same CPU kernels compute every step.
func TestPartialBackend(t *testing.T) {
	ref := testGraphModel(t)
	samples := goldenAudio(t, "jfk")
	want, err := ref.Probs(ctx(), samples, 16000)
	if err != nil {
		t.Fatal(err)
	}
	dev, host := kerneltest.NewPartial(), cpu.New()
	eng := graph.NewEngine(dev, graph.WithHost(host))
	m, err := vad.New(eng, modelArt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, err := m.Probs(ctx(), samples, 16000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d chunks, the CPU backend gives %d", len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("chunk %d: p = %v on the partitioned engine, %v on the CPU backend", i, got[i], want[i])
		}
	}
	st, c := eng.Stats(), dev.Counts()
	t.Logf("silero vad, jfk (%d chunks): %d device steps (%v), %d host steps, %d transfers (%d bytes), %d programs compiled, %d constants uploaded (%d bytes)",
		len(got), c.Launches, c.PerOp, host.Stats().Dispatches, st.Transfers, st.TransferBytes, st.Compiles, c.Wraps, c.WrapBytes)
	if st.Transfers == 0 || host.Stats().Dispatches == 0 {
		t.Errorf("nothing ran on the host: the engine did not partition")
	}
}
