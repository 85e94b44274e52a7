package kokoro

import (
	"context"
	"fmt"
	"iter"
	"math"

	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// Streaming the first piece of a chunk.
//
// The model synthesises a whole chunk before any of its audio exists, and
// the decoder and generator (graph 3) are most of the work. Cutting the
// text in two and speaking the pieces as separate utterances gives early
// audio but changes the speech: each piece gets its own durations,
// intonation and final fall, heard as a sentence break ("The quick brown.
// Fox jumps…"). Instead, the text encoder and the prosody predictor (a
// small share of the work) run once over the whole chunk, so durations,
// F0 and energy are the unsplit utterance's; only graph 3 runs twice:
// first over a window of the leading frames (up to a word boundary plus
// some right context), whose audio leaves at once, then over all frames,
// whose audio from the join on is exactly the unsplit synthesis. The two
// agree closely before the join (the generator's instance norms see the
// window's statistics rather than the whole chunk's, hence some context
// and a short crossfade in the pause between two words).
const (
	// firstContextFrames of right context the first window decodes beyond
	// the join (0.15 s). More context matches the unsplit head a little
	// better (log-spectral RMS 0.27–0.30 at 12 frames, 0.28–0.33 at 6 on
	// the goldens) but is decoded before the first audio leaves: 12 frames
	// cost the benchmark paragraph ~90 ms of TTFA (583 vs 489 ms median,
	// 2 cores).
	firstContextFrames = 6
	// joinFadeSamples is the crossfade at the join (10 ms each side).
	joinFadeSamples = 240
	// minFirstFrames: a join earlier than this (0.5 s, mostly the model's
	// lead-in) would make the whole chunk's decode race the playback of
	// too little audio.
	minFirstFrames = 20
)

// SpeakStreamed synthesises one chunk like SpeakChunk and yields its audio
// in pieces, the first as early as possible: when the chunk has more than
// firstTokens phoneme tokens (and firstTokens > 0), the first piece ends
// at a word boundary within the first firstTokens tokens (after clause
// punctuation if there is one, see firstJoin), and the second piece is
// the rest. Unlike speaking two shorter chunks, the concatenated pieces
// are the chunk's own utterance: the same durations and intonation, and
// from the join on the same samples as SpeakChunk's. Otherwise it yields
// SpeakChunk's audio as one piece. Iteration stops at the first error,
// yielded with nil samples.
func (m *Model) SpeakStreamed(ctx context.Context, c g2p.Chunk, v *Voice, speed float32, firstTokens int) iter.Seq2[[]float32, error] {
	if v == nil {
		return func(yield func([]float32, error) bool) { yield(nil, fmt.Errorf("kokoro: SpeakStreamed needs a voice")) }
	}
	return func(yield func([]float32, error) bool) {
		for pcm, err := range m.streamed(ctx, c.IDs, v.Style(c.Tokens()), speed, firstTokens) {
			if err != nil {
				err = fmt.Errorf("kokoro: chunk %d %q: %w", c.Index, clip(c.Text, 40), err)
			}
			if !yield(pcm, err) || err != nil {
				return
			}
		}
	}
}

// streamed is SpeakStreamed on Synthesize's arguments.
func (m *Model) streamed(ctx context.Context, ids []int64, style []float32, speed float32, firstTokens int) iter.Seq2[[]float32, error] {
	return func(yield func([]float32, error) bool) {
		tr, err := m.prosodyTrace(ctx, ids, style, speed)
		if err != nil {
			yield(nil, err)
			return
		}
		join, ok := firstJoin(ids, tr.Durations, firstTokens)
		if !ok {
			if err := m.runDecoder(ctx, style, tr); err != nil {
				yield(nil, err)
				return
			}
			yield(tr.Audio, nil)
			return
		}
		win := tr.window(min(frames(tr.Durations), join+firstContextFrames))
		if err := m.runDecoder(ctx, style, win); err != nil {
			yield(nil, err)
			return
		}
		at := join * SamplesPerFrame
		if !yield(win.Audio[:at-joinFadeSamples], nil) {
			return
		}
		if err := m.runDecoder(ctx, style, tr); err != nil {
			yield(nil, err)
			return
		}
		rest := tr.Audio[at-joinFadeSamples:]
		crossfade(rest[:2*joinFadeSamples], win.Audio[at-joinFadeSamples:at+joinFadeSamples])
		yield(rest, nil)
	}
}

// prosodyTrace runs graphs 1 and 2: the durations, F0, energy and aligned
// text features of an utterance, everything graph 3 needs.
func (m *Model) prosodyTrace(ctx context.Context, ids []int64, style []float32, speed float32) (*Trace, error) {
	if err := m.check(ids, style, speed); err != nil {
		return nil, err
	}
	tr := &Trace{}
	d, tEn, err := m.runText(ctx, ids, style, speed, tr)
	if err != nil {
		return nil, err
	}
	if f := frames(tr.Durations); f > MaxFrames {
		return nil, fmt.Errorf("%w: %d frames (%.0f s of audio) predicted for one chunk, at most %d: cut the text or raise the speed",
			ErrTooLong, f, float64(f*SamplesPerFrame)/SampleRate, MaxFrames)
	}
	if err := m.runProsody(ctx, d, tEn, style, tr); err != nil {
		return nil, err
	}
	return tr, nil
}

// window returns the graph-3 inputs of the first n alignment frames: the
// F0 and energy curves (two values per frame) and the aligned text
// features cut to n frames. The harmonic source built from the shorter F0
// curve is the long one's prefix, its phase being a running sum from the
// start (only the last frames' interpolation differs).
func (tr *Trace) window(n int) *Trace {
	F := len(tr.F0) / 2
	w := &Trace{F0: tr.F0[:2*n], N: tr.N[:2*n], ASR: make([]float32, hiddenDim*n)}
	for c := range hiddenDim {
		copy(w.ASR[c*n:(c+1)*n], tr.ASR[c*F:c*F+n])
	}
	return w
}

// firstJoin picks the frame where the first piece of a streamed chunk ends:
// in the middle of the frames of a word-separating space among the first
// maxTokens phoneme tokens — the last one after clause punctuation (, ; :
// — …) if any, else the last one — and at least minFirstFrames in. It
// reports false when the chunk has no more than maxTokens phoneme tokens,
// maxTokens ≤ 0, or no space qualifies, or too little audio would follow
// the join for a crossfade and the window's context to be worth it.
func firstJoin(ids, durations []int64, maxTokens int) (join int, ok bool) {
	if maxTokens <= 0 || len(ids)-2 <= maxTokens || len(durations) != len(ids) {
		return 0, false
	}
	space, _ := vocab.ID(' ')
	clause := map[int64]bool{}
	for _, r := range ",;:—…" {
		if id, ok := vocab.ID(r); ok {
			clause[id] = true
		}
	}
	start := make([]int, len(ids)+1) // start[i]: first frame of ids[i]
	for i, d := range durations {
		start[i+1] = start[i] + int(d)
	}
	joinSpace, joinClause := -1, -1
	// ids[0] is the pad; phoneme token k (1-based) is ids[k].
	for i := 2; i <= min(maxTokens, len(ids)-3); i++ {
		if ids[i] != space || (start[i]+start[i+1])/2 < minFirstFrames {
			continue
		}
		joinSpace = i
		if clause[ids[i-1]] {
			joinClause = i
		}
	}
	i := joinClause
	if i < 0 {
		i = joinSpace
	}
	if i < 0 {
		return 0, false
	}
	join = (start[i] + start[i+1]) / 2
	total := start[len(ids)]
	if join*SamplesPerFrame < 2*joinFadeSamples || total-join < 2 {
		return 0, false
	}
	return join, true
}

// crossfade blends the first samples of dst (the whole chunk's audio) in
// from src (the first window's) with a raised-cosine weight: src at the
// start, dst at the end, so the seam inherits no step from either.
func crossfade(dst, src []float32) {
	n := len(dst)
	for i := range dst {
		w := fadeIn(float64(i+1) / float64(n+1))
		dst[i] = float32(w)*dst[i] + float32(1-w)*src[i]
	}
}

// fadeIn is the raised-cosine ramp from 0 at x = 0 to 1 at x = 1.
func fadeIn(x float64) float64 { return 0.5 - 0.5*math.Cos(math.Pi*x) }
