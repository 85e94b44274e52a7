package whisper_test

import (
	"slices"
	"testing"

	"github.com/tensorforge/forge/models/whisper"
)

// TestStartProgramsBounded: a long transcription starts windows with
// prefixes of ever new lengths (the prompt is the previous window's text).
// The cache keeps only the most recent Start programs open, so their
// buffers do not pile up, and a length met again after its program was
// dropped gives the same logits as the first time.
func TestStartProgramsBounded(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	f := goldenFile(t, "tiny", "jfk")
	hidden, _ := goldenF32(t, f, "encoder_last_hidden_state")
	ids := goldenIDs(t, f, "token_ids")
	const lengths = 12
	if len(ids) < lengths+1 {
		t.Fatalf("golden holds %d tokens, want %d", len(ids), lengths+1)
	}
	w, err := m.Attach(bg, hidden)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	start := func(n int) []float32 {
		t.Helper()
		logits := logitRows(m, 1)
		if err := w.Start(bg, 1, ids[:n], []int{n - 1}, logits); err != nil {
			t.Fatal(err)
		}
		if err := w.Step(bg, ids[n:n+1], logits); err != nil { // and one step program
			t.Fatal(err)
		}
		return logits[0]
	}
	first := start(1)
	for n := 2; n <= lengths; n++ {
		start(n)
		if held := w.HeldStarts(); held > whisper.MaxStarts {
			t.Fatalf("after %d prefix lengths the cache holds %d Start programs, want at most %d", n, held, whisper.MaxStarts)
		}
	}
	before := m.Engine().Stats()
	again := start(1)
	if after := m.Engine().Stats(); after.GraphBuilds == before.GraphBuilds {
		t.Error("the Start program of length 1 was still kept after 11 newer lengths")
	}
	if !slices.Equal(first, again) {
		t.Errorf("logits of a rebuilt Start program differ from the first run's")
	}
}
