package device

import (
	"context"
	"io"

	"github.com/tensorforge/forge/stage"
)

// Source returns a pipeline source that reads frames of frame samples
// from c, each a new slice the pipeline may keep, with offsets in samples
// at c.SampleRate(). It stops after maxSamples samples (the last frame may
// be shorter) or, when maxSamples ≤ 0, when the pipeline is cancelled. It
// does not close c.
func (c *Capture) Source(name string, frame int, maxSamples int64) *stage.Source[[]float32] {
	if frame < 1 {
		frame = c.rate / 100
	}
	var got int64
	return stage.FromSamples(name, c.rate, func(ctx context.Context) ([]float32, error) {
		n := frame
		if maxSamples > 0 {
			if got >= maxSamples {
				return nil, io.EOF
			}
			n = int(min(int64(frame), maxSamples-got))
		}
		buf := make([]float32, n)
		k, err := c.Read(ctx, buf)
		got += int64(k)
		return buf[:k], err
	})
}

// Sink returns a pipeline sink that plays every frame it receives. Close p
// after the pipeline ends to play out the last buffer.
func (p *Playback) Sink(name string) *stage.Sink[[]float32] {
	return stage.ToFunc(name, func(ctx context.Context, f stage.Frame[[]float32]) error {
		return p.Write(ctx, f.Payload)
	})
}
