package whisper_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/weights"
)

// TestSilenceTailKept: a model that keeps its silence tail writes it
// once; a second model of the same weights and code reads it instead of
// encoding 30 s of silence and transcribes jfk the same; a file that does
// not check out (flipped byte) is computed again and replaced with the
// same bytes; another code version keeps a file of its own, and removes
// the first once that is an hour old.
func TestSilenceTailKept(t *testing.T) {
	model(t, "tiny", whisper.F32) // skips without the weights
	id, err := whisper.ArtifactID("tiny")
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() *whisper.Model {
		a, err := weights.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		m, err := whisper.New(engine(), a, whisper.F32)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	dir := t.TempDir()
	samples := clipSamples(t, "jfk")
	transcribe := func(m *whisper.Model) string {
		opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
		opts.Language = "en"
		tr, err := m.Transcribe(bg, samples, opts)
		if err != nil {
			t.Fatal(err)
		}
		return tr.Text
	}

	m1 := fresh()
	path := whisper.KeepSilenceTail(m1, dir, "v1")
	want := transcribe(m1)
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the tail was not kept: %v", err)
	}
	if whisper.SilenceTailEncodes(m1) != 1 {
		t.Errorf("first model encoded the tail %d times, want 1", whisper.SilenceTailEncodes(m1))
	}

	m2 := fresh()
	if p := whisper.KeepSilenceTail(m2, dir, "v1"); p != path {
		t.Fatalf("same weights and code, another file: %s, %s", p, path)
	}
	if got := transcribe(m2); got != want || whisper.SilenceTailEncodes(m2) != 0 {
		t.Errorf("second model: %q with %d encodings of the tail, want %q with none", got, whisper.SilenceTailEncodes(m2), want)
	}

	bad := append([]byte(nil), written...)
	bad[len(bad)/2] ^= 1
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	m3 := fresh()
	whisper.KeepSilenceTail(m3, dir, "v1")
	if got := transcribe(m3); got != want || whisper.SilenceTailEncodes(m3) != 1 {
		t.Errorf("over a damaged file: %q with %d encodings, want %q with one", got, whisper.SilenceTailEncodes(m3), want)
	}
	if again, err := os.ReadFile(path); err != nil || string(again) != string(written) {
		t.Errorf("the damaged file was not replaced by the same bytes (%v)", err)
	}

	m4 := fresh()
	p2 := whisper.KeepSilenceTail(m4, dir, "v2")
	if p2 == path || filepath.Dir(p2) != dir {
		t.Fatalf("another code version keeps %s (v1: %s)", p2, path)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	transcribe(m4)
	if _, err := os.Stat(p2); err != nil {
		t.Errorf("v2's tail was not kept: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("v1's two-hour-old tail is still there beside v2's (%v)", err)
	}
}
