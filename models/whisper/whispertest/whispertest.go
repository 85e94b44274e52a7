// Package whispertest holds what tests of the Whisper model in several
// packages (the model's own, the GPU tests in e2e) do alike: encoding a
// recording's first window and stepping a window greedily.
package whispertest

import (
	"context"

	"github.com/tensorforge/forge/models/whisper"
)

// Argmax returns the index of the largest logit (the first of equals).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// EncodeFirst encodes the first 30-s window of 16 kHz samples.
func EncodeFirst(ctx context.Context, m *whisper.Model, samples []float32) (*whisper.Window, error) {
	a, err := m.NewAudio(samples)
	if err != nil {
		return nil, err
	}
	feats, err := a.Features(nil, 0)
	a.Close()
	if err != nil {
		return nil, err
	}
	return m.Encode(ctx, feats)
}

// GreedySteps starts w on prefix and feeds it its argmax token steps
// times, returning the logits (vocab of them) of every step; it tells w
// the decode is done (decode.Finisher) at the end.
func GreedySteps(ctx context.Context, w *whisper.Window, prefix []int32, steps, vocab int) ([][]float32, error) {
	return GreedyStepsEach(ctx, w, prefix, steps, vocab, nil)
}

// GreedyStepsEach is GreedySteps calling before, when not nil, before
// each step with the step's index. A window that steps through a Batch
// takes its slot in its first step, so a test can order its windows' slots
// by waiting in before(0) and signalling in before(1).
func GreedyStepsEach(ctx context.Context, w *whisper.Window, prefix []int32, steps, vocab int, before func(step int)) ([][]float32, error) {
	row := make([]float32, vocab)
	if err := w.Start(ctx, 1, prefix, []int{len(prefix) - 1}, [][]float32{row}); err != nil {
		return nil, err
	}
	var out [][]float32
	for step := range steps {
		if before != nil {
			before(step)
		}
		next := make([]float32, vocab)
		if err := w.Step(ctx, []int32{int32(Argmax(row))}, [][]float32{next}); err != nil {
			return nil, err
		}
		out = append(out, next)
		row = next
	}
	w.Finish()
	return out, nil
}
