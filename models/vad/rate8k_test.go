package vad_test

import (
	"testing"

	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/models/vad"
)

// TestBranch8k runs the 8 kHz branch (the export's other If branch) on
// jfk.wav resampled to 8 kHz. There is no onnxruntime golden for it, so
// this checks the wiring: 256-sample chunks cover the same 32 ms as the
// 16 kHz chunks, and the decisions at 0.5 must agree with the 16 kHz
// golden ones on at least 90% of the chunks, with the same number of
// segments.
func TestBranch8k(t *testing.T) {
	m := testModel(t)
	if n, err := m.ChunkSize(vad.Rate8k); err != nil || n != 256 {
		t.Fatalf("ChunkSize(8000) = %d, %v; want 256 (the weights carry model_8k.*)", n, err)
	}
	rs, err := resample.New(16000, 8000)
	if err != nil {
		t.Fatal(err)
	}
	x := rs.Flush(rs.Process(nil, goldenAudio(t, "jfk")))
	probs, err := m.Probs(ctx(), x, vad.Rate8k)
	if err != nil {
		t.Fatal(err)
	}
	golden := goldenProbs(t, "jfk")
	if len(probs) != len(golden) {
		t.Fatalf("%d chunks at 8 kHz, %d at 16 kHz", len(probs), len(golden))
	}
	same := 0
	for i := range probs {
		if (probs[i] >= 0.5) == (golden[i] >= 0.5) {
			same++
		}
	}
	t.Logf("8 kHz decisions agree with 16 kHz on %d of %d chunks", same, len(probs))
	if same*10 < 9*len(probs) {
		t.Errorf("8 kHz decisions agree with 16 kHz on only %d of %d chunks", same, len(probs))
	}
	s8, err := m.Detect(ctx(), x, vad.Rate8k, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if want := referenceCases[5].want; len(s8) != len(want) {
		t.Errorf("8 kHz segments %v, 16 kHz reference %v", s8, want)
	}
}
