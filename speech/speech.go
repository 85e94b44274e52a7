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

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/cpu" // the backend every build has
)

// NewEngine opens the compute backend named device ("cpu", "cuda", …; ""
// or "auto" for the best one registered that runs here) with matrix
// products in the given precision (kernels.F32 or its zero value; F16 or
// BF16 on a GPU) and returns an engine on it.
func NewEngine(device string, products kernels.DType) (*graph.Engine, error) {
	b, err := kernels.Open(device, kernels.Options{Precision: products})
	if err != nil {
		return nil, fmt.Errorf("speech: opening device %q: %w", device, err)
	}
	return graph.NewEngine(b), nil
}
