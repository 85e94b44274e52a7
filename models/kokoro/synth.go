package kokoro

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// DefaultFirstTokens is the default length limit, in phoneme tokens, of
// the first piece of a stream (see SplitFirst): two or three words, about
// a second of speech (with the model's lead-in), so that audio starts
// after a fraction of a sentence's synthesis time. Measured with say on
// the 30-word benchmark paragraph (2 cores, other work on the machine):
// TTFA 330–350 ms at 16, 370–440 ms at 20, where the first piece grows
// from "The old" (1.35 s of audio) to "The old lighthouse" (1.73 s).
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

// SplitFirst cuts a chunk longer than maxTokens phoneme tokens in two at a
// word boundary, for latency: the model synthesises a whole chunk before
// any of its audio exists, so a short first piece makes the first audio
// leave sooner. The cut goes after the last clause punctuation (, ; : —
// …) followed by a space within the limit, else at the last space within
// it, and never inside a word; the first piece keeps at least a quarter of
// the limit. Both pieces are complete utterances (pads around their ids);
// their Text is the chunk's, their Phonemes their own. ok is false when
// the chunk is short enough or has no usable word boundary.
func SplitFirst(c g2p.Chunk, maxTokens int) (first, rest g2p.Chunk, ok bool) {
	toks := c.IDs
	if len(toks) < 3 || c.Tokens() <= maxTokens {
		return c, g2p.Chunk{}, false
	}
	space, _ := vocab.ID(' ')
	clause := map[int64]bool{}
	for _, r := range ",;:—…" {
		if id, ok := vocab.ID(r); ok {
			clause[id] = true
		}
	}
	body := toks[1 : len(toks)-1]
	cutSpace, cutClause := -1, -1 // index of the space token in body
	for i := max(1, maxTokens/4); i < min(len(body)-1, maxTokens+1); i++ {
		if body[i] != space {
			continue
		}
		cutSpace = i
		if clause[body[i-1]] {
			cutClause = i
		}
	}
	cut := cutClause
	if cut < 0 {
		cut = cutSpace
	}
	if cut < 0 {
		return c, g2p.Chunk{}, false
	}
	wrap := func(ids []int64) []int64 {
		out := make([]int64, 0, len(ids)+2)
		out = append(out, vocab.Pad)
		out = append(out, ids...)
		return append(out, vocab.Pad)
	}
	first, rest = c, c
	first.IDs = wrap(body[:cut])
	rest.IDs = wrap(body[cut+1:])
	first.Phonemes, _ = vocab.Decode(first.IDs)
	rest.Phonemes, _ = vocab.Decode(rest.IDs)
	return first, rest, true
}

// clip shortens s to at most n runes for messages.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
