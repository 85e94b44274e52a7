// Package speech is the home of Forge's embeddable speech pipelines, the
// code a Go service links to turn audio into text and text into audio
// without copying the commands:
//
//   - speech/listen: a Transcriber (audio → Silero VAD → Whisper → timed
//     segments, each as soon as it is final) and a Detector (VAD alone).
//   - speech/say: a Synthesizer (text, a reader or a stream of LLM tokens →
//     Kokoro → PCM, each piece as soon as it is ready).
//
// Each loads its models once, in New, and is then safe for any number of
// concurrent calls, each with its own options, context and metrics. This
// package holds what the two share: the compute engine their models run
// on. One engine may serve a Transcriber and a Synthesizer at once (its
// programs run concurrently on separate queues), so a service that does
// both opens it once with NewEngine and passes it to both.
//
// The GPU backends register themselves when imported: a program that
// wants --device cuda imports kernels/backends (the commands do); the CPU
// backend is always there.
package speech

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/cpu" // the backend every build has
	"github.com/tensorforge/forge/weights"
)

// NewEngine opens the compute backend named device ("cpu", "cuda", …; ""
// or "auto" for the best one registered that runs here) with matrix
// products in the given precision (kernels.F32 or its zero value; F16 or
// BF16 on a GPU) and returns an engine on it.
//
// The CPU backend keeps its packed weights in the model cache's "derived"
// folder (see weights.DefaultDir), where later processes map them instead
// of packing; a synthesizer or transcriber writes them after its warm-up
// (see SavePacks).
func NewEngine(device string, products kernels.DType) (*graph.Engine, error) {
	opts := kernels.Options{Precision: products}
	if dir, err := weights.DefaultDir(); err == nil {
		opts.PackDir = filepath.Join(dir, "derived")
	}
	b, err := kernels.Open(device, opts)
	if err != nil {
		return nil, fmt.Errorf("speech: opening device %q: %w", device, err)
	}
	return graph.NewEngine(b), nil
}

// packSaver is the optional backend method that writes the packed
// weights it made in this process to its pack directory (the CPU
// backend's SavePacks).
type packSaver interface {
	SavePacks(log *slog.Logger) error
}

// SavePacks has eng's backend keep on disk, for later processes, the
// weights it packed (see NewEngine); a no-op for backends that keep
// nothing. Failures only cost later processes the packing, so they are
// logged on log at debug level, not returned.
func SavePacks(eng *graph.Engine, log *slog.Logger) {
	if s, ok := eng.Backend().(packSaver); ok {
		s.SavePacks(log)
	}
}
