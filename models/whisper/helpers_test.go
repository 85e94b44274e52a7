package whisper_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/safetensors"
)

// One engine and one model per (size, precision) for the whole test binary:
// loading and the first compilations are the slow part.
var (
	engOnce sync.Once
	eng     *graph.Engine
	modelMu sync.Mutex
	loaded  = map[string]*whisper.Model{}
)

func engine() *graph.Engine {
	engOnce.Do(func() { eng = graph.NewEngine(cpu.New()) })
	return eng
}

// model returns the cached model (RealLength windows, the default),
// skipping loudly when its weights are not in the model cache.
func model(t testing.TB, size string, prec whisper.Precision) *whisper.Model {
	t.Helper()
	return modelWith(t, size, prec, whisper.RealLength)
}

// paddedModel returns the cached model that encodes 30-s windows, as the
// goldens were made.
func paddedModel(t testing.TB, size string, prec whisper.Precision) *whisper.Model {
	t.Helper()
	return modelWith(t, size, prec, whisper.FullWindow)
}

func modelWith(t testing.TB, size string, prec whisper.Precision, span whisper.EncodeLength) *whisper.Model {
	t.Helper()
	key := size + "/" + prec.String() + "/" + span.String()
	modelMu.Lock()
	defer modelMu.Unlock()
	if m := loaded[key]; m != nil {
		return m
	}
	a := openArtifact(t, size)
	m, err := whisper.New(engine(), a, prec, whisper.WithEncodeLength(span))
	if err != nil {
		t.Fatal(err)
	}
	loaded[key] = m // the artifact stays open for the test binary's life
	return m
}

// openArtifact opens the converted weights of a model size from the cache,
// skipping loudly when they are not there; the caller closes them.
func openArtifact(t testing.TB, size string) *weights.Artifact {
	t.Helper()
	id, err := whisper.ArtifactID(size)
	if err != nil {
		t.Fatal(err)
	}
	a, err := weights.Open(id)
	if errors.Is(err, weights.ErrNotReady) {
		t.Skipf("SKIPPED: %s is not in the model cache: run `go run ./cmd/models fetch %s` (or `make models`): %v", id, id, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// shared returns a path under ../shared, skipping when it is absent.
func shared(t testing.TB, elem ...string) string { return testenv.Shared(t, elem...) }

// goldenFile opens a golden safetensors file.
func goldenFile(t testing.TB, size, clip string) *safetensors.File {
	t.Helper()
	f, err := safetensors.Open(shared(t, "golden", "whisper-"+size, clip+".safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func goldenF32(t testing.TB, f *safetensors.File, name string) ([]float32, []int) {
	t.Helper()
	ts, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("golden tensor %s missing", name)
	}
	v, err := ts.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v, ts.Shape
}

func goldenIDs(t testing.TB, f *safetensors.File, name string) []int32 {
	t.Helper()
	ts, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("golden tensor %s missing", name)
	}
	v, err := ts.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// clipSamples reads a golden clip's audio (16 kHz mono).
func clipSamples(t testing.TB, clip string) []float32 {
	t.Helper()
	c, err := audio.ReadWAVFile(shared(t, "golden", "audio", clip+".wav"))
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate != 16000 {
		t.Fatalf("%s: %d Hz", clip, c.SampleRate)
	}
	return c.Samples
}

// frameCosine returns the mean and minimum cosine similarity of rows of
// width d.
func frameCosine(a, b []float32, d int) (mean, minimum float64) {
	minimum = 1
	n := len(b) / d
	for r := range n {
		var ab, aa, bb float64
		for i := r * d; i < (r+1)*d; i++ {
			ab += float64(a[i]) * float64(b[i])
			aa += float64(a[i]) * float64(a[i])
			bb += float64(b[i]) * float64(b[i])
		}
		c := ab / math.Sqrt(aa*bb)
		mean += c
		minimum = min(minimum, c)
	}
	return mean / float64(n), minimum
}

var bg = context.Background()
