package vad_test

import (
	"math"
	"testing"
)

// TestGoldenProbs checks every chunk's probability against onnxruntime's
// (../shared/golden/vad, protocol in its README): max |p − golden| ≤ 1e-4
// and the same decision at 0.5 on every chunk.
func TestGoldenProbs(t *testing.T) {
	m := testModel(t)
	for _, name := range []string{"jfk", "silero_test"} {
		t.Run(name, func(t *testing.T) {
			want := goldenProbs(t, name)
			samples := goldenAudio(t, name)
			got, err := m.Probs(ctx(), samples, 16000)
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
			t.Logf("%s: %d chunks, max |p − golden| = %.3g (chunk %d)", name, len(want), worst, at)
			if !(worst <= 1e-4) {
				t.Errorf("max |p − golden| = %.3g at chunk %d (p %.6f, golden %.6f), want ≤ 1e-4", worst, at, got[at], want[at])
			}
		})
	}
}
