package kokoro

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/tensorforge/forge/models/kokoro/g2p"
)

// DefaultFirstTokens is the default length limit, in phoneme tokens, of
// the first piece of a stream (see SpeakStreamed): two or three words,
// about a second of speech with the model's lead-in, so that audio starts
// after a fraction of a sentence's synthesis time.
const DefaultFirstTokens = 16

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

// Speak synthesises a stream of chunks in order and yields each piece's
// audio as soon as it is ready, so the first sentence can play while the
// rest is still being synthesised. With firstTokens > 0 the chunks are
// streamed with SpeakStreamed: the first chunk's first words are heard
// after a fraction of its synthesis time, and a chunk much longer than
// the audio before it comes in stretches that are each ready before the
// audio before them has played, without changing how it is spoken; with
// 0 each chunk comes whole. Iteration stops at the first error (from the
// chunks or from synthesis), which is yielded with a zero Speech.
func (m *Model) Speak(ctx context.Context, chunks iter.Seq2[g2p.Chunk, error], v *Voice, speed float32, firstTokens int) iter.Seq2[Speech, error] {
	return func(yield func(Speech, error) bool) {
		var s Streaming
		if firstTokens > 0 {
			s.FirstTokens = firstTokens
		}
		for c, err := range chunks {
			if err != nil {
				yield(Speech{}, err)
				return
			}
			for pcm, err := range m.SpeakStreamed(ctx, c, v, speed, s) {
				if err != nil {
					yield(Speech{}, err)
					return
				}
				if !yield(Speech{Chunk: c, Samples: pcm}, nil) {
					return
				}
				if s.FirstTokens > 0 || s.Lead > 0 {
					s.Lead += len(pcm)
				}
			}
			s.FirstTokens = 0
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
