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
// rest is still being synthesised. The first chunk is streamed with
// SpeakStreamed at firstTokens (0: whole), so its first words are heard
// after a fraction of the chunk's synthesis time without changing how it
// is spoken. Iteration stops at the first error (from the chunks or from
// synthesis), which is yielded with a zero Speech.
func (m *Model) Speak(ctx context.Context, chunks iter.Seq2[g2p.Chunk, error], v *Voice, speed float32, firstTokens int) iter.Seq2[Speech, error] {
	return func(yield func(Speech, error) bool) {
		first := firstTokens
		for c, err := range chunks {
			if err != nil {
				yield(Speech{}, err)
				return
			}
			for pcm, err := range m.SpeakStreamed(ctx, c, v, speed, first) {
				if err != nil {
					yield(Speech{}, err)
					return
				}
				if !yield(Speech{Chunk: c, Samples: pcm}, nil) {
					return
				}
			}
			first = 0
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
