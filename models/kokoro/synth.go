package kokoro

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/tensorforge/forge/models/kokoro/g2p"
)

// Speech is the audio of one chunk of text.
type Speech struct {
	// Chunk is the text, phonemes and ids that were spoken.
	Chunk g2p.Chunk
	// Samples is the chunk's audio, 24 kHz mono.
	Samples []float32
}

// SpeakChunk synthesises one front-end chunk with a voice: the voice's
// style row for the chunk's phoneme count, the chunk's ids, the speed.
func (m *Model) SpeakChunk(ctx context.Context, c g2p.Chunk, v *Voice, speed float32) ([]float32, error) {
	if v == nil {
		return nil, errors.New("kokoro: SpeakChunk needs a voice")
	}
	pcm, err := m.Synthesize(ctx, c.IDs, v.Style(c.Tokens()), speed)
	if err != nil {
		return nil, fmt.Errorf("kokoro: chunk %d %q: %w", c.Index, clip(c.Text, 40), err)
	}
	return pcm, nil
}

// Speak synthesises a stream of chunks in order and yields each chunk's
// audio as soon as it is ready, so the first sentence can play while the
// rest is still being synthesised. Iteration stops at the first error
// (from the chunks or from synthesis), which is yielded with a zero
// Speech.
func (m *Model) Speak(ctx context.Context, chunks iter.Seq2[g2p.Chunk, error], v *Voice, speed float32) iter.Seq2[Speech, error] {
	return func(yield func(Speech, error) bool) {
		for c, err := range chunks {
			if err != nil {
				yield(Speech{}, err)
				return
			}
			pcm, err := m.SpeakChunk(ctx, c, v, speed)
			if err != nil {
				yield(Speech{}, err)
				return
			}
			if !yield(Speech{Chunk: c, Samples: pcm}, nil) {
				return
			}
		}
	}
}

// clip shortens s to at most n runes for messages.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
