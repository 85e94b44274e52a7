package vad_test

import (
	"math"
	"testing"

	"github.com/tensorforge/forge/models/vad"
)

// TestGoldenProbs checks every chunk's probability against onnxruntime's
// (../shared/golden/vad, protocol in its README): max |p − golden| ≤ 1e-4
// and the same decision at 0.5 on every chunk, on the compiled programs
// and on the path the model picks here (the fast path on a CPU with a SIMD
// panel kernel).
func TestGoldenProbs(t *testing.T) {
	for _, tc := range []struct {
		path string
		m    *vad.Model
	}{{"graph", testGraphModel(t)}, {"default", testModel(t)}} {
		for _, name := range []string{"jfk", "silero_test"} {
			t.Run(tc.path+"/"+name, func(t *testing.T) {
				want := goldenProbs(t, name)
				samples := goldenAudio(t, name)
				got, err := tc.m.Probs(ctx(), samples, 16000)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%d chunks, golden has %d", len(got), len(want))
				}
				var worst float64
				at := 0
				for i := range want {
					d := math.Abs(float64(got[i]) - float64(want[i]))
					if math.IsNaN(d) || d > worst {
						worst, at = d, i
					}
					if (got[i] >= 0.5) != (want[i] >= 0.5) {
						t.Errorf("chunk %d: p = %.6f, golden %.6f: decisions at 0.5 differ", i, got[i], want[i])
					}
				}
				t.Logf("%s (%s): %d chunks, max |p − golden| = %.3g (chunk %d)", name, tc.m.Path(), len(want), worst, at)
				if !(worst <= 1e-4) {
					t.Errorf("max |p − golden| = %.3g at chunk %d (p %.6f, golden %.6f), want ≤ 1e-4", worst, at, got[at], want[at])
				}
			})
		}
	}
}
