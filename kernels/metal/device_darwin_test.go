//go:build darwin

package metal

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// openDevice opens the Metal backend or skips loudly.
func openDevice(t *testing.T) *Backend {
	t.Helper()
	b, err := New(kernels.Options{})
	if err != nil {
		t.Skipf("SKIPPED: no usable Metal GPU, the Metal backend is not tested on a device: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// TestOnDevice runs the whole conformance kit on the GPU: every op the
// backend supports (generated and hand-written kernels, compiled by
// Apple's compiler) against kernels/cpu.
func TestOnDevice(t *testing.T) {
	b := openDevice(t)
	t.Logf("device: %s", b.Device())
	kerneltest.Check(t, b)
}

// TestModelsOnDevice runs Silero VAD, Whisper tiny and Kokoro on the
// Metal backend, with the steps it lacks on the CPU in shared memory.
func TestModelsOnDevice(t *testing.T) {
	b := openDevice(t)
	for _, m := range modelRuns() {
		t.Run(m.name, func(t *testing.T) {
			eng := graph.NewEngine(b, graph.WithHost(cpu.New()))
			m.run(t, context.Background(), eng)
			st := eng.Stats()
			t.Logf("%s on %s: %d dispatches, %d transfers (%d bytes; 0 on unified memory)", m.name, b.Device(), b.Stats().Dispatches, st.Transfers, st.TransferBytes)
			if st.Transfers != 0 {
				t.Errorf("%d transfers: host steps did not run in place on shared memory", st.Transfers)
			}
		})
	}
}
