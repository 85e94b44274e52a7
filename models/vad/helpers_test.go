package vad_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/safetensors"
)

var (
	modelOnce  sync.Once
	model      *vad.Model
	graphModel *vad.Model // the same weights on compiled programs only
	modelArt   *weights.Artifact
	modelErr   error
)

// testModel opens silero-vad-v6 from the model cache without fetching. It
// skips, saying what to run, when the artifact is absent, and fails when it
// is there but does not load.
func testModel(t testing.TB) *vad.Model {
	t.Helper()
	modelOnce.Do(func() {
		c, err := weights.NewCache()
		if err != nil {
			modelErr = err
			return
		}
		c.Progress = nil
		modelArt, modelErr = c.Open(weights.SileroVADv6)
		if modelErr != nil {
			return
		}
		eng := graph.NewEngine(cpu.New())
		if model, modelErr = vad.New(eng, modelArt); modelErr != nil {
			return
		}
		graphModel, modelErr = vad.NewGraphOnly(eng, modelArt)
	})
	if errors.Is(modelErr, weights.ErrNotReady) {
		t.Skipf("SKIPPED: silero-vad-v6 is not in the model cache: %v — run `go run ./cmd/models fetch silero-vad-v6` (or `make models`)", modelErr)
	}
	if modelErr != nil {
		t.Fatalf("loading silero-vad-v6: %v", modelErr)
	}
	return model
}

// testGraphModel is testModel on the compiled programs alone (the fast
// path's reference).
func testGraphModel(t testing.TB) *vad.Model {
	t.Helper()
	testModel(t)
	return graphModel
}

// sharedDir returns ../shared, skipping loudly when its VAD goldens are absent.
func sharedDir(t testing.TB) string {
	t.Helper()
	testenv.Shared(t, "golden", "vad")
	return testenv.SharedDir(t)
}

// goldenProbs reads `probs` from ../shared/golden/vad/<name>.safetensors.
func goldenProbs(t testing.TB, name string) []float32 {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(sharedDir(t), "golden", "vad", name+".safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tn, ok := f.Tensor("probs")
	if !ok {
		t.Fatalf("%s.safetensors has no probs", name)
	}
	p, err := tn.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), p...)
}

// goldenAudio reads ../shared/golden/audio/<name>.wav as 16 kHz mono.
func goldenAudio(t testing.TB, name string) []float32 {
	t.Helper()
	c, err := audio.ReadWAVFile(filepath.Join(sharedDir(t), "golden", "audio", name+".wav"))
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate != 16000 {
		t.Fatalf("%s.wav is %d Hz", name, c.SampleRate)
	}
	return c.Samples
}

func ctx() context.Context { return context.Background() }
