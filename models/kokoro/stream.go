package kokoro

import (
	"context"
	"fmt"
	"iter"
	"math"
	"sync"

	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// Streaming a chunk in pieces.
//
// The model synthesises a whole chunk before any of its audio exists, and
// the decoder and generator (graph 3) are most of the work. Cutting the
// text in two and speaking the pieces as separate utterances gives early
// audio but changes the speech: each piece gets its own durations,
// intonation and final fall, heard as a sentence break ("The quick brown.
// Fox jumps…"). Instead, the text encoder and the prosody predictor (a
// small share of the work) run once over the whole chunk, so durations,
// F0 and energy are the unsplit utterance's, and graph 3 runs over
// stretches of the frames, each joined to the next in the middle of a
// word-separating space with a short crossfade. Each stretch is decoded
// with some context on both sides, and its harmonic source is the whole
// utterance's (the phase runs on from the chunk's start), so a stretch
// differs from the unsplit synthesis only where the generator's instance
// norms see the stretch's statistics rather than the chunk's: about as
// much as the int8 artifact differs from float32 (TestSpeakStreamedJoin).
//
// The first stretch ends within a few words, so audio starts after a
// fraction of the chunk's synthesis time. Each later one is at most
// growth times the audio handed out before it, so it is decoded while that
// audio plays: decoding runs at a few times real time, and one stretch
// covering the rest of a long sentence would leave the listener waiting
// in the middle of it (the 30-word paragraph: 0.7 s of audio, then 1.1 s
// of silence while the other 10 s were decoded).
const (
	// contextFrames of context each stretch decodes beyond its joins
	// (0.15 s a side). More context matches the unsplit synthesis a
	// little better (log-spectral RMS 0.27–0.30 at 12 frames, 0.28–0.33
	// at 6 on the goldens' first stretch) but the first stretch's is
	// decoded before the first audio leaves: 12 frames cost the
	// benchmark paragraph ~90 ms of TTFA (583 vs 489 ms median, 2 cores).
	contextFrames = 6
	// joinFadeSamples is the crossfade at a join (10 ms each side).
	joinFadeSamples = 240
	// minFirstFrames: a first join earlier than this (0.5 s, mostly the
	// model's lead-in) would give the next stretch too little audio to be
	// decoded behind.
	minFirstFrames = 20
	// minStretchFrames bounds every later stretch from below (1 s): the
	// instance norms of a shorter one see little but a pause or the final
	// silence (stretches of 0.5 s were 0.41–0.73 in log-spectral RMS from
	// the unsplit goldens, against 0.20–0.33 at this bound).
	minStretchFrames = 40
	// growth bounds a stretch after the first by the audio handed out
	// before it. Decoding a stretch of growth·A takes growth·A·RTF; at 2
	// it ends before the A seconds already handed out have played for
	// any RTF below about 0.45 (0.17–0.2 on two cores here).
	growth = 2
)

// Streaming says how a chunk's audio is handed out.
type Streaming struct {
	// FirstTokens ends the first piece of the chunk at a word boundary
	// within this many phoneme tokens (see firstJoin), when the chunk is
	// longer; 0: no early first piece.
	FirstTokens int
	// Lead is the audio already handed out before this chunk in the same
	// stream, in samples at SampleRate: a chunk longer than growth times
	// what came before it is handed out in stretches, so that it does
	// not keep a listener of that audio waiting.
	Lead int
}

// on reports whether a chunk may be cut at all: with neither a first
// piece nor audio before it, it is handed out whole, as SpeakChunk's.
func (s Streaming) on() bool { return s.FirstTokens > 0 || s.Lead > 0 }

// SpeakStreamed synthesises one chunk like SpeakChunk and yields its audio
// in pieces (see Streaming), the first as early as possible, each later
// one decoded while the audio before it plays. The pieces are the chunk's
// own utterance, not shorter utterances: the same durations and
// intonation as SpeakChunk's, the same length, and samples that differ
// from SpeakChunk's only by the stretches' own instance norms. A chunk
// that is not cut yields SpeakChunk's audio as one piece. Iteration stops
// at the first error, yielded with nil samples.
func (m *Model) SpeakStreamed(ctx context.Context, c g2p.Chunk, v *Voice, speed float32, s Streaming) iter.Seq2[[]float32, error] {
	if v == nil {
		return func(yield func([]float32, error) bool) { yield(nil, fmt.Errorf("kokoro: SpeakStreamed needs a voice")) }
	}
	return func(yield func([]float32, error) bool) {
		for pcm, err := range m.streamed(ctx, c.IDs, v.Style(c.Tokens()), speed, s) {
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
func (m *Model) streamed(ctx context.Context, ids []int64, style []float32, speed float32, s Streaming) iter.Seq2[[]float32, error] {
	return func(yield func([]float32, error) bool) {
		tr, err := m.prosodyTrace(ctx, ids, style, speed)
		if err != nil {
			yield(nil, err)
			return
		}
		joins := planJoins(ids, tr.Durations, s)
		if len(joins) == 0 {
			if err := m.runDecoder(ctx, style, tr, sourceSpan{}); err != nil {
				yield(nil, err)
				return
			}
			yield(tr.Audio, nil)
			return
		}
		total := frames(tr.Durations)
		// The whole chunk's source spectrogram, for the stretches that do
		// not start at its beginning (a prefix's is the whole's but for
		// its last frames' interpolation, which the context covers).
		whole := sync.OnceValue(func() []float32 { return m.sourceSpectrum(tr.F0) })
		var tail []float32 // the audio before the last join, crossfade's worth
		a := 0
		for k := 0; k <= len(joins); k++ {
			b := total
			if k < len(joins) {
				b = joins[k]
			}
			lo, hi := max(0, a-contextFrames), min(total, b+contextFrames)
			win := tr.window(lo, hi)
			var span sourceSpan
			if lo > 0 {
				span = sourceSpan{f0: tr.F0, lo: lo, hi: hi, host: whole}
			}
			if err := m.runDecoder(ctx, style, win, span); err != nil {
				yield(nil, err)
				return
			}
			// win.Audio[i] is sample lo·SamplesPerFrame + i of the chunk.
			off := lo * SamplesPerFrame
			from, to := 0, len(win.Audio)
			if k > 0 {
				from = a*SamplesPerFrame - joinFadeSamples - off
				crossfade(win.Audio[from:from+2*joinFadeSamples], tail)
			}
			if k < len(joins) {
				at := b*SamplesPerFrame - off
				to = at - joinFadeSamples
				tail = append(tail[:0], win.Audio[to:at+joinFadeSamples]...)
			}
			if !yield(win.Audio[from:to], nil) {
				return
			}
			a = b
		}
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
	defer closeHeld(d, tEn)
	if f := frames(tr.Durations); f > MaxFrames {
		return nil, fmt.Errorf("%w: %d frames (%.0f s of audio) predicted for one chunk, at most %d: cut the text or raise the speed",
			ErrTooLong, f, float64(f*SamplesPerFrame)/SampleRate, MaxFrames)
	}
	if err := m.runProsody(ctx, d, tEn, style, tr); err != nil {
		return nil, err
	}
	return tr, nil
}

// window returns the graph-3 inputs of alignment frames [lo, hi): the F0
// and energy curves (two values per frame) and the aligned text features
// of those frames. From lo = 0, the harmonic source built from the
// shorter F0 curve is the long one's prefix, its phase being a running
// sum from the start (only the last frames' interpolation differs); a
// window from further in needs the whole curve's (sourceStretch).
func (tr *Trace) window(lo, hi int) *Trace {
	F := len(tr.F0) / 2
	n := hi - lo
	w := &Trace{F0: tr.F0[2*lo : 2*hi], N: tr.N[2*lo : 2*hi], ASR: make([]float32, hiddenDim*n)}
	for c := range hiddenDim {
		copy(w.ASR[c*n:(c+1)*n], tr.ASR[c*F+lo:c*F+hi])
	}
	return w
}

// sourceStretch cuts the source spectrogram of frames [lo, hi) out of
// spec, a chunk's of total frames ([2·specBins, columns] row-major, one
// column every hop samples and one more at the end).
func sourceStretch(spec []float32, total, lo, hi int) []float32 {
	const per = SamplesPerFrame / hop
	cols := total*per + 1
	n := (hi-lo)*per + 1
	out := make([]float32, 2*specBins*n)
	for r := range 2 * specBins {
		copy(out[r*n:(r+1)*n], spec[r*cols+lo*per:])
	}
	return out
}

// planJoins returns the frames where a chunk's stretches meet, in order
// (none: the chunk whole). The first is firstJoin's when s asks for a
// first piece and the chunk opens the stream; each later stretch ends at
// the middle of the last word-separating space within growth times the
// audio handed out before it (s.Lead and the chunk's stretches so far),
// and at least minStretchFrames from its start; the last stretch runs to
// the end, and is never shorter than minStretchFrames.
func planJoins(ids, durations []int64, s Streaming) []int {
	if !s.on() || len(durations) != len(ids) {
		return nil
	}
	spaces := spaceFrames(ids, durations)
	total := frames(durations)
	lead := s.Lead / SamplesPerFrame
	var joins []int
	a := 0
	if s.Lead == 0 {
		j, ok := firstJoin(ids, durations, s.FirstTokens)
		if !ok {
			return nil
		}
		joins, a = append(joins, j), j
	}
	for {
		limit := a + max(minStretchFrames, growth*(lead+a))
		if limit+minStretchFrames >= total {
			return joins
		}
		b := -1
		for _, f := range spaces {
			if f > limit {
				break
			}
			if f >= a+minStretchFrames && total-f >= minStretchFrames {
				b = f
			}
		}
		if b < 0 { // no space in reach: the first one past it
			for _, f := range spaces {
				if f > limit && total-f >= minStretchFrames {
					b = f
					break
				}
			}
		}
		if b < 0 {
			return joins
		}
		joins, a = append(joins, b), b
	}
}

// spaceFrames returns the middle frame of every word-separating space of
// ids, in order.
func spaceFrames(ids, durations []int64) []int {
	space, _ := vocab.ID(' ')
	var out []int
	start := 0
	for i, d := range durations {
		if ids[i] == space {
			out = append(out, start+int(d)/2)
		}
		start += int(d)
	}
	return out
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
