package whisper

import (
	"context"
	"fmt"
	"slices"

	"github.com/tensorforge/forge/graph"
)

// session is the decoding state of one window: the cross-attention keys
// and values of every decoder layer, and self-attention caches by number
// of hypotheses.
//
// The cross-attention keys and values are stored per head and transposed,
// [heads, dh, 1500]: a decoder step multiplies one query row by them, and in
// this layout both products (q·Kᵀ and attention·V) run over rows of 1500
// contiguous floats instead of 1500 rows of 64. A window shorter than 30 s
// fills the first positions of each row and the model's silence tail the
// rest (see silenceTail). Sessions are pooled by the model because the
// engine keys compiled programs by the state buffers they touch: a reused
// session finds its programs compiled.
type session struct {
	m              *Model
	crossK, crossV []*graph.State // per layer: [heads, dh, 1500 audio positions]
	tailFrom       int            // positions [tailFrom, 1500) hold the silence tail
	caches         map[int]*kvCache
	encoders       []*encoderProgram // kept encoder programs (see keepsEncoder), least recently used first
}

// maxEncoders bounds the encoder programs a session keeps, one per window
// length (RealLength's buckets): each holds its activations' arena.
const maxEncoders = 2

// encoderProgram is a session's compiled encoder pass for windows of one
// length: features in, the session's cross-attention keys and values out.
type encoderProgram struct {
	prog      *graph.Program
	features  graph.Tensor
	frames    int // mel frames in
	positions int // encoder positions out (frames / 2)
}

// encoder returns the session's encoder program for windows of frames mel
// frames, building and compiling it the first time.
func (s *session) encoder(ctx context.Context, frames int) (*encoderProgram, error) {
	for i, ep := range s.encoders {
		if ep.frames == frames {
			s.encoders = append(slices.Delete(s.encoders, i, i+1), ep)
			return ep, nil
		}
	}
	m := s.m
	g := graph.New()
	x := g.Input("features", graph.F32, graph.Shape{1, m.cfg.NMels, frames})
	h := m.enc.forward(m.encoderArith(g), x)
	prog, err := m.eng.Compile(ctx, m.crossAssign(g, h, []*session{s})...)
	if err != nil {
		return nil, fmt.Errorf("whisper: compiling the encoder for %d frames: %w", frames, err)
	}
	if len(s.encoders) == maxEncoders {
		s.encoders[0].prog.Close()
		s.encoders = slices.Delete(s.encoders, 0, 1)
	}
	ep := &encoderProgram{prog: prog, features: x, frames: frames, positions: h.Dim(-2)}
	s.encoders = append(s.encoders, ep)
	return ep, nil
}

// run encodes one window's features into the session's states and waits
// for it.
func (ep *encoderProgram) run(ctx context.Context, features []float32) error {
	if err := ep.prog.SetF32(ctx, ep.features, features); err != nil {
		return err
	}
	if err := ep.prog.Run(ctx); err != nil {
		return err
	}
	return ep.prog.Sync(ctx)
}

// kvCache is the self-attention cache of a batch of hypotheses: per layer,
// keys and values [beams, text positions, d], and the decoder programs that
// run on it. A program is built and compiled once per shape (see stepKey)
// with the position as an input, so every token of every window that reuses
// this cache runs the same compiled program.
type kvCache struct {
	k, v    []*graph.State
	steps   map[stepKey]*stepProgram
	starts  []stepKey               // keys of Start programs in steps, least recently used first
	reorder map[int]*reorderProgram // by attended length
}

// maxStarts bounds the Start programs a cache keeps. Their shape follows
// the prefix, whose prompt (the previous window's text) has a new length
// almost every window: kept all, they held a program's buffers for every
// length a long transcription met (an hour of audio: +32 MB and rising).
// Step programs, one per attended length, are all kept.
const maxStarts = 4

// stepKey is what a decoder program's shape depends on.
type stepKey struct {
	n      int // tokens fed per hypothesis (1 for a step, the prefix for Start)
	length int // cache positions attended (a bucket ≥ position + n)
	rows   int // logit rows read at given positions (Start); 0: the last token of each hypothesis
}

// stepProgram is a compiled decoder step and its inputs.
type stepProgram struct {
	prog         *graph.Program
	ids, pos, at graph.Tensor
}

// reorderProgram gathers the cache rows of the surviving hypotheses.
type reorderProgram struct {
	prog  *graph.Program
	order graph.Tensor
}

// attendLength returns the bucket of cache positions a step at positions
// up to need−1 attends over: positions past need−1 are masked, so a few
// wasted columns buy one program for many positions.
func attendLength(need, textCtx int) int {
	for _, l := range []int{32, 64, 128, 256} {
		if need <= l && l < textCtx {
			return l
		}
	}
	return textCtx
}

// maxCaches bounds how many batch sizes a session keeps caches for (1 for
// language detection and greedy decoding, the beam size, the best-of size).
const maxCaches = 3

func newSession(m *Model) (*session, error) {
	H := m.cfg.DecoderHeads
	k, v, err := m.layerStates("cross", graph.Shape{H, m.cfg.DModel / H, m.cfg.AudioCtx})
	if err != nil {
		return nil, err
	}
	return &session{m: m, crossK: k, crossV: v, caches: map[int]*kvCache{}, tailFrom: m.cfg.AudioCtx}, nil
}

// layerStates makes a key and a value state of the given shape per decoder
// layer (named prefix.i.key and prefix.i.value), or none.
func (m *Model) layerStates(prefix string, shape graph.Shape) (keys, values []*graph.State, err error) {
	for i := range m.cfg.DecoderLayers {
		var k, v *graph.State
		k, err = m.eng.NewState(fmt.Sprintf("%s.%d.key", prefix, i), graph.F32, shape)
		if err == nil {
			keys = append(keys, k)
			v, err = m.eng.NewState(fmt.Sprintf("%s.%d.value", prefix, i), graph.F32, shape)
		}
		if err != nil {
			for _, st := range slices.Concat(keys, values) {
				st.Close()
			}
			return nil, nil, fmt.Errorf("whisper: %w", err)
		}
		values = append(values, v)
	}
	return keys, values, nil
}

// cache returns the self-attention cache for beams hypotheses.
func (s *session) cache(beams int) (*kvCache, error) {
	if c := s.caches[beams]; c != nil {
		return c, nil
	}
	if len(s.caches) >= maxCaches {
		for b, c := range s.caches {
			if b != 1 {
				c.close()
				delete(s.caches, b)
				break
			}
		}
	}
	m := s.m
	k, v, err := m.layerStates("self", graph.Shape{beams, m.cfg.TextCtx, m.cfg.DModel})
	if err != nil {
		return nil, err
	}
	c := &kvCache{k: k, v: v, steps: map[stepKey]*stepProgram{}, reorder: map[int]*reorderProgram{}}
	s.caches[beams] = c
	return c, nil
}

func (c *kvCache) close() {
	for _, p := range c.steps {
		p.prog.Close()
	}
	for _, p := range c.reorder {
		p.prog.Close()
	}
	for _, st := range slices.Concat(c.k, c.v) {
		st.Close()
	}
}

func (s *session) close() {
	for _, ep := range s.encoders {
		ep.prog.Close()
	}
	for _, st := range slices.Concat(s.crossK, s.crossV) {
		st.Close()
	}
	for _, c := range s.caches {
		c.close()
	}
}

// acquire returns pooled decoding state, or new state.
func (m *Model) acquire() (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if n := len(m.idle); n > 0 {
		s := m.idle[n-1]
		m.idle = m.idle[:n-1]
		return s, nil
	}
	return newSession(m)
}

// release returns decoding state to the pool. Compiled programs are keyed
// by the state buffers they use, so reusing state reuses programs.
func (m *Model) release(s *session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		s.close()
		return
	}
	m.idle = append(m.idle, s)
}
