package whisper

import (
	"context"
	"fmt"
	"slices"

	"github.com/tensorforge/forge/graph"
)

// EncodeLength chooses how many mel frames of a window the encoder runs on.
type EncodeLength int

const (
	// RealLength (the default) encodes the frames that hold audio and half
	// a second more, rounded up to a whole second (BucketFrames), padded
	// with the recording's log-mel of silence as the full window is, with
	// the positional embedding and attention over that length: a 1-s clip
	// encodes 2 s (100 positions) instead of 30 (1500). The decoder attends over those positions followed by a fixed
	// encoding of silence up to 30 s (see silenceTail), since Whisper,
	// trained on 30-s windows only, loops on a shorter encoder output. Each
	// bucket is a shape of its own: the engine compiles the encoder once
	// per bucket met and reuses it after; the decoder's programs do not
	// depend on it.
	RealLength EncodeLength = iota
	// FullWindow encodes every window as 30 seconds (3000 frames, 1500
	// positions), the audio padded with silence: what Whisper was trained
	// on, and what the onnxruntime goldens were made with.
	FullWindow
)

// String returns "real" or "full".
func (l EncodeLength) String() string {
	switch l {
	case RealLength:
		return "real"
	case FullWindow:
		return "full"
	}
	return fmt.Sprintf("EncodeLength(%d)", int(l))
}

// BucketFrames is the step of RealLength windows in mel frames (1 s): a
// window encodes the next multiple of it at or above its audio's frames
// plus marginFrames, so a 1.1 s clip encodes 2 s and jfk's 11 s encode
// 12 s. A coarser step compiles fewer encoder programs (30 at most here)
// at the price of more padding.
const BucketFrames = 100

// marginFrames is the least silence a RealLength window keeps after its
// audio (0.5 s). Without it, speech that ends at a bucket's edge is
// followed at once by the silence tail, and tiny once transcribed such a
// clip as nothing; with 0.5 and 1 s the clips' transcripts were alike.
const marginFrames = 50

// Option configures a Model at Open or New.
type Option func(*Model) error

// WithEncodeLength sets how much of each window the encoder runs on
// (RealLength without this option).
func WithEncodeLength(l EncodeLength) Option {
	return func(m *Model) error {
		if l != RealLength && l != FullWindow {
			return fmt.Errorf("whisper: unknown encode length %v", l)
		}
		m.span = l
		return nil
	}
}

// encodeFrames returns how many mel frames the encoder runs on for a
// window whose first frames hold audio (the rest is silence): all of the
// window in FullWindow, else frames and the margin rounded up to a bucket.
func (m *Model) encodeFrames(frames int) int {
	W := m.cfg.Frames()
	if m.span == FullWindow {
		return W
	}
	b := (max(frames, 1) + marginFrames + BucketFrames - 1) / BucketFrames * BucketFrames
	return min(b, W)
}

// silenceFloor is the log-mel value (after Whisper's normalisation) of the
// silence whose encoding completes a RealLength window to 30 s for the
// decoder. A recording's own silence sits at its maximum minus 8, rescaled:
// −0.54 for jfk, −0.64 to −0.89 for the cards and goforward clips; −0.5,
// −0.75 and −1 gave the same transcripts on those up to a word's spelling,
// and −0.5 matched the padded window's tokens most often (tiny and base,
// f32 and int8; reports/2026-11-23-whisper-length.md).
const silenceFloor = -0.5

// silenceTail holds, per decoder layer, the cross-attention keys and values
// of a 30-second window of silence at silenceFloor ([heads, dh, 1500], as
// a session stores them). Whisper was trained on 30-s windows only: a
// decoder whose cross-attention ends with the audio finds no end of speech
// and repeats the utterance until the text context is full ("10 of clubs.
// 10 of clubs. …" on a 1 s clip). So a RealLength window encodes its own
// positions and attends over those followed by this tail: the decoder sees
// what it was trained on, silence after the speech up to 30 s, at the cost
// of one 30-s encoding per model, made on first use.
type silenceTail struct {
	k, v []*graph.State
}

// silence returns the model's silence tail, reading it from the kept file
// (see tailCache) or computing it on first use.
func (m *Model) silence(ctx context.Context) (*silenceTail, error) {
	m.tailMu.Lock()
	defer m.tailMu.Unlock()
	if m.tail != nil {
		return m.tail, nil
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	c := m.cfg
	t := &silenceTail{}
	H := c.DecoderHeads
	shape := graph.Shape{H, c.DModel / H, c.AudioCtx}
	for i := range c.DecoderLayers {
		for _, dst := range []*[]*graph.State{&t.k, &t.v} {
			st, err := m.eng.NewState(fmt.Sprintf("silence.%d", i), graph.F32, shape)
			if err != nil {
				t.close()
				return nil, fmt.Errorf("whisper: silence tail: %w", err)
			}
			*dst = append(*dst, st)
		}
	}
	if m.tails.load(ctx, m, t) {
		m.tail = t
		return t, nil
	}
	feats := make([]float32, c.NMels*c.Frames())
	for i := range feats {
		feats[i] = silenceFloor
	}
	g := graph.New()
	a := m.encoderArith(g)
	// An input, not a constant: the engine would fold a constant's whole
	// encoder at compile time.
	h := m.enc.forward(a, g.InputF32("silence", graph.Shape{1, c.NMels, c.Frames()}, feats))
	var effects []graph.Tensor
	a.crossKV(h, m.dec.crossAttentions(), func(i int, k, v graph.Tensor) {
		effects = append(effects,
			g.Assign(t.k[i], splitHeads(k, H).T(), 0, 0),
			g.Assign(t.v[i], splitHeads(v, H).T(), 0, 0))
	})
	if _, err := m.eng.Eval(ctx, effects...); err != nil {
		t.close()
		return nil, fmt.Errorf("whisper: silence tail: %w", err)
	}
	m.tails.store(ctx, m, t)
	m.tail = t
	m.tailEncodes++
	return t, nil
}

func (t *silenceTail) close() {
	for _, st := range slices.Concat(t.k, t.v) {
		st.Close()
	}
}

// completeWindows writes the silence tail after the first S encoder
// positions of each session's cross-attention state, where it is not there
// already: positions [S, s.tailFrom) (a session keeps the tail from earlier
// windows; only what a longer window overwrote is copied again).
func (m *Model) completeWindows(ctx context.Context, sessions []*session, S int) error {
	if S >= m.cfg.AudioCtx {
		for _, s := range sessions {
			s.tailFrom = m.cfg.AudioCtx
		}
		return nil
	}
	t, err := m.silence(ctx)
	if err != nil {
		return err
	}
	g := graph.New()
	var effects []graph.Tensor
	for _, s := range sessions {
		if S >= s.tailFrom {
			continue
		}
		for i := range s.crossK {
			effects = append(effects,
				g.Assign(s.crossK[i], g.ReadState(t.k[i]).Slice(2, S, s.tailFrom), 2, S),
				g.Assign(s.crossV[i], g.ReadState(t.v[i]).Slice(2, S, s.tailFrom), 2, S))
		}
	}
	if len(effects) > 0 {
		if _, err := m.eng.Eval(ctx, effects...); err != nil {
			return fmt.Errorf("whisper: silence tail: %w", err)
		}
	}
	for _, s := range sessions {
		s.tailFrom = S
	}
	return nil
}
