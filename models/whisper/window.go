package whisper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/whisper/decode"
)

// Window is one encoded window (30 seconds, or the bucket of its audio)
// with its decoder: it implements decode.Decoder. It is not safe for
// concurrent use. Close it to return its state to the model.
type Window struct {
	m       *Model
	s       *session
	cache   *kvCache
	beams   int // hypotheses since Start
	pos     int // positions held by the self-attention caches
	logits  []float32
	ids     []int64
	scratch []int64 // position and logit-row inputs

	// Batched steps (see Batch): slot is w's place in batch (-1 for none;
	// read and moved under the batch's lock);
	// stepping says its steps go there (its own cache lags behind);
	// slotCross and slotSelf that the slot holds its encoder keys and
	// values, and its current self-attention cache.
	batch     *Batch
	slot      int
	stepping  bool
	slotCross bool
	slotSelf  bool
	alone     bool // the batch dissolved during this decode: step alone until the next Start
	request   *stepRequest
	linger    *time.Timer
}

var (
	_ decode.Decoder  = (*Window)(nil)
	_ decode.Finisher = (*Window)(nil)
)

// Encode runs the encoder on one window of log-mel features ([nMels, F],
// band-major; F even, 3000 for 30 s) and returns the window ready for
// decoding; the cross-attention keys and values are computed in the same
// pass.
func (m *Model) Encode(ctx context.Context, features []float32) (*Window, error) {
	f, err := m.checkFeatures(features)
	if err != nil {
		return nil, err
	}
	if m.keepsEncoder() {
		return m.encodeKept(ctx, features, f)
	}
	return m.newWindow(ctx, func(g *graph.Graph) graph.Tensor {
		x := g.InputF32("features", graph.Shape{1, m.cfg.NMels, f}, features)
		return m.enc.forward(m.encoderArith(g), x)
	})
}

// encodeKept is Encode through the session's kept encoder program for
// windows of frames mel frames (see keepsEncoder): the features are
// copied in and the program runs, with no graph built or looked up.
func (m *Model) encodeKept(ctx context.Context, features []float32, frames int) (*Window, error) {
	s, err := m.acquire()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Window, error) {
		s.tailFrom = m.cfg.AudioCtx // overwritten in part, perhaps
		m.release(s)
		return nil, err
	}
	ep, err := s.encoder(ctx, frames)
	if err != nil {
		return fail(err)
	}
	if ep.positions < m.cfg.AudioCtx {
		// Made before the window's program runs, as in newWindows.
		if _, err := m.silence(ctx); err != nil {
			return fail(err)
		}
	}
	if err := ep.run(ctx, features); err != nil {
		return fail(fmt.Errorf("whisper: encoding a window: %w", err))
	}
	if err := m.completeWindows(ctx, []*session{s}, ep.positions); err != nil {
		return fail(err)
	}
	return &Window{m: m, s: s, slot: -1}, nil
}

// Attach returns a window for a given encoder output (last hidden state
// [S, d], S ≤ 1500 positions; 1500 for 30 s), as the ONNX decoder takes
// encoder_hidden_states.
func (m *Model) Attach(ctx context.Context, hidden []float32) (*Window, error) {
	d := m.cfg.DModel
	if s := len(hidden) / d; len(hidden)%d != 0 || s < 1 || s > m.cfg.AudioCtx {
		return nil, fmt.Errorf("whisper: encoder output holds %d values, want 1 to %d positions × %d (%d for 30 s)", len(hidden), m.cfg.AudioCtx, d, m.cfg.AudioCtx*d)
	}
	return m.newWindow(ctx, func(g *graph.Graph) graph.Tensor {
		return g.InputF32("hidden", graph.Shape{len(hidden) / d, d}, hidden)
	})
}

// newWindow computes the cross-attention keys and values of hidden (built
// by the callback in the window's graph) into a pooled session.
func (m *Model) newWindow(ctx context.Context, hidden func(*graph.Graph) graph.Tensor) (*Window, error) {
	ws, err := m.newWindows(ctx, 1, hidden)
	if err != nil {
		return nil, err
	}
	return ws[0], nil
}

// newWindows computes the cross-attention keys and values of count
// windows' encoder outputs (hidden: [S, d] for one, [count, S, d] for
// several, built by the callback in one graph) into pooled sessions, in one
// program.
func (m *Model) newWindows(ctx context.Context, count int, hidden func(*graph.Graph) graph.Tensor) ([]*Window, error) {
	sessions := make([]*session, 0, count)
	release := func() {
		for _, s := range sessions {
			m.release(s)
		}
	}
	for range count {
		s, err := m.acquire()
		if err != nil {
			release()
			return nil, err
		}
		sessions = append(sessions, s)
	}
	g := graph.New()
	h := hidden(g)
	// A shorter window fills the first S positions of each row, the
	// silence tail the rest.
	S := h.Dim(-2)
	if S < m.cfg.AudioCtx {
		// The silence tail (a 30-s encoding, once per model) is made
		// before this window's program runs, not after it: the window's
		// program, smaller, then runs in the buffers the tail's left in
		// the engine's pool, whereas the tail's, made after, found only
		// smaller idle buffers and allocated its own beside them (listen
		// jfk, base, peak RSS: 261 → 239 MiB).
		if _, err := m.silence(ctx); err != nil {
			release()
			return nil, err
		}
	}
	if _, err := m.eng.Eval(ctx, m.crossAssign(g, h, sessions)...); err != nil {
		for _, s := range sessions {
			s.tailFrom = m.cfg.AudioCtx // overwritten in part, perhaps
		}
		release()
		return nil, fmt.Errorf("whisper: encoding %d windows: %w", count, err)
	}
	if err := m.completeWindows(ctx, sessions, S); err != nil {
		for _, s := range sessions {
			s.tailFrom = m.cfg.AudioCtx
		}
		release()
		return nil, err
	}
	ws := make([]*Window, count)
	for b, s := range sessions {
		ws[b] = &Window{m: m, s: s, slot: -1}
	}
	return ws, nil
}

// crossAssign returns the effects that write the cross-attention keys and
// values of hidden ([S, d] for one session, [len(sessions), S, d] for
// several) into the sessions' states, per head and transposed.
func (m *Model) crossAssign(g *graph.Graph, hidden graph.Tensor, sessions []*session) []graph.Tensor {
	H := m.cfg.DecoderHeads
	perHeadT := func(x graph.Tensor) graph.Tensor { return splitHeads(x, H).T() } // [..., S, d] → [..., H, dh, S]
	member := func(x graph.Tensor, b int) graph.Tensor {
		if len(sessions) == 1 {
			return x
		}
		return x.Slice(0, b, b+1).Squeeze(0)
	}
	var effects []graph.Tensor
	m.encoderArith(g).crossKV(hidden, m.dec.crossAttentions(), func(i int, k, v graph.Tensor) {
		// Split and transposed once for the batch, then sliced per
		// session: the same views as per session, in half the graph's
		// nodes (32 windows: 256 assignments, which took longer to
		// build than the GPU's copies to run).
		k, v = perHeadT(k), perHeadT(v)
		for b, s := range sessions {
			effects = append(effects,
				g.Assign(s.crossK[i], member(k, b), 2, 0),
				g.Assign(s.crossV[i], member(v, b), 2, 0))
		}
	})
	return effects
}

// EncodeBatch encodes several windows of log-mel features (each [nMels,
// F], band-major, of one length F for all: 3000 for 30 s, or the longest
// window's bucket with the others padded to it, as TranscribeMany does) in
// one pass of the encoder with a batch axis: the products see B times the
// rows, which is what fills a GPU. Each returned window decodes on its own,
// as from Encode. F32 and BF16 only: the int8 graph quantizes activations
// over the whole tensor, so batching would change each window's
// arithmetic (bfloat16 rounds each value on its own).
func (m *Model) EncodeBatch(ctx context.Context, features [][]float32) ([]*Window, error) {
	if len(features) == 0 {
		return nil, nil
	}
	if m.prec == Int8 {
		return nil, fmt.Errorf("whisper: batched encoding needs the f32 or bf16 model, not %v", m.prec)
	}
	frames := 0
	for i, f := range features {
		n, err := m.checkFeatures(f)
		if err != nil {
			return nil, fmt.Errorf("window %d: %w", i, err)
		}
		if i > 0 && n != frames {
			return nil, fmt.Errorf("whisper: window %d holds %d frames, window 0 %d: a batch encodes one length", i, n, frames)
		}
		frames = n
	}
	return m.newWindows(ctx, len(features), func(g *graph.Graph) graph.Tensor {
		// One input in parts: the caller's slices go to the backend as
		// they are, each where it lies in the batch. A joined copy made
		// the host allocate, clear and fill 30 MB for 32 windows before
		// the GPU could start; an input per window joined by a Concat
		// cost the GPU a copy launch per window.
		x := g.InputF32Parts("features", graph.Shape{len(features), m.cfg.NMels, frames}, features)
		return m.enc.forward(m.encoderArith(g), x)
	})
}

// Close returns the window's state to the model; the window is unusable
// afterwards. Closing twice is harmless.
func (w *Window) Close() error {
	if w.s == nil {
		return nil
	}
	if w.batch != nil {
		w.Finish()
		w.batch.release(w)
	}
	w.m.release(w.s)
	w.s, w.cache = nil, nil
	return nil
}

// UseBatch makes w's greedy steps run in b with other windows' (see
// Batch); nil makes them run alone again.
func (w *Window) UseBatch(b *Batch) {
	if w.batch == b {
		return
	}
	if w.batch != nil {
		w.Finish()
		w.batch.release(w)
	}
	w.batch = b
}

// Finish implements decode.Finisher: the decode that stepped w has ended,
// so its batch no longer waits for w's steps.
func (w *Window) Finish() {
	if w.stepping {
		w.stepping = false
		w.batch.leave(w)
	}
}

// Positions returns how many token positions the window's caches hold.
func (w *Window) Positions() int { return w.pos }

// Start implements decode.Decoder: it feeds prefix to beams fresh
// hypotheses and writes the logits at positions at into logits.
func (w *Window) Start(ctx context.Context, beams int, prefix []int32, at []int, logits [][]float32) error {
	if w.s == nil {
		return ErrClosed
	}
	c := w.m.cfg
	switch {
	case beams < 1:
		return fmt.Errorf("whisper: start: %d hypotheses", beams)
	case len(prefix) == 0 || len(prefix) >= c.TextCtx:
		return fmt.Errorf("whisper: start: prefix of %d tokens (want 1..%d)", len(prefix), c.TextCtx-1)
	case len(at) != len(logits) || len(at) == 0:
		return fmt.Errorf("whisper: start: %d positions for %d logit rows", len(at), len(logits))
	}
	for _, p := range at {
		if p < 0 || p >= len(prefix) {
			return fmt.Errorf("whisper: start: position %d outside the prefix of %d", p, len(prefix))
		}
	}
	if err := w.checkRows(logits); err != nil {
		return err
	}
	if err := w.checkTokens(prefix); err != nil {
		return err
	}
	cache, err := w.s.cache(beams)
	if err != nil {
		return err
	}
	w.Finish()
	w.slotSelf = false // a batch slot's copy of the cache is stale from here on
	w.alone = false
	w.cache, w.beams, w.pos = cache, beams, 0
	w.ids = w.ids[:0]
	for range beams {
		for _, id := range prefix {
			w.ids = append(w.ids, int64(id))
		}
	}
	return w.run(ctx, len(prefix), at, logits)
}

// Step implements decode.Decoder: it appends tokens[b] to hypothesis b and
// writes the logits of each hypothesis's next token.
func (w *Window) Step(ctx context.Context, tokens []int32, logits [][]float32) error {
	if w.s == nil {
		return ErrClosed
	}
	switch {
	case w.cache == nil:
		return fmt.Errorf("whisper: step before start")
	case len(tokens) != w.beams || len(logits) != w.beams:
		return fmt.Errorf("whisper: step: %d tokens and %d logit rows for %d hypotheses", len(tokens), len(logits), w.beams)
	case w.pos >= w.m.cfg.TextCtx:
		return fmt.Errorf("whisper: step: the %d-token context is full", w.m.cfg.TextCtx)
	}
	if err := w.checkRows(logits); err != nil {
		return err
	}
	if err := w.checkTokens(tokens); err != nil {
		return err
	}
	if w.batch != nil && w.beams == 1 && !w.alone {
		if !w.stepping {
			joined, err := w.batch.join(ctx, w)
			if err != nil {
				return err
			}
			w.stepping = joined
		}
		if w.stepping {
			err := w.batch.step(ctx, w, tokens[0], logits[0])
			switch {
			case errors.Is(err, errAlone):
				// The batch dissolved; the cache is back in w's own.
				w.stepping, w.alone = false, true
			case err != nil:
				return err
			default:
				w.pos++
				return nil
			}
		}
	}
	w.ids = w.ids[:0]
	for _, id := range tokens {
		w.ids = append(w.ids, int64(id))
	}
	return w.run(ctx, 1, nil, logits)
}

// Reorder implements decode.Decoder: hypothesis b continues from the
// cached keys and values of hypothesis src[b].
func (w *Window) Reorder(src []int) error {
	if w.s == nil {
		return ErrClosed
	}
	if w.cache == nil {
		return fmt.Errorf("whisper: reorder before start")
	}
	if len(src) != w.beams {
		return fmt.Errorf("whisper: reorder: %d sources for %d hypotheses", len(src), w.beams)
	}
	identity := true
	for b, s := range src {
		if s < 0 || s >= w.beams {
			return fmt.Errorf("whisper: reorder: source %d outside 0..%d", s, w.beams-1)
		}
		identity = identity && s == b
	}
	if identity || w.pos == 0 {
		return nil
	}
	idx := make([]int64, len(src))
	for b, s := range src {
		idx[b] = int64(s)
	}
	length := attendLength(w.pos, w.m.cfg.TextCtx)
	rp := w.cache.reorder[length]
	if rp == nil {
		g := graph.New()
		order := g.Input("order", graph.I64, graph.Shape{len(idx)})
		var effects []graph.Tensor
		for _, st := range slices.Concat(w.cache.k, w.cache.v) {
			kept := g.ReadState(st).Slice(1, 0, length).IndexSelect(0, order)
			effects = append(effects, g.Assign(st, kept, 1, 0))
		}
		prog, err := w.m.eng.Compile(context.Background(), effects...)
		if err != nil {
			return fmt.Errorf("whisper: reorder: %w", err)
		}
		rp = &reorderProgram{prog: prog, order: order}
		w.cache.reorder[length] = rp
	}
	ctx := context.Background()
	if err := rp.prog.Set(ctx, rp.order, i64Bytes(idx)); err != nil {
		return fmt.Errorf("whisper: reorder: %w", err)
	}
	if err := rp.prog.Run(ctx); err != nil {
		return fmt.Errorf("whisper: reorder: %w", err)
	}
	return nil
}

func (w *Window) checkTokens(ids []int32) error {
	for _, id := range ids {
		if id < 0 || int(id) >= w.m.cfg.Vocab {
			return fmt.Errorf("whisper: token %d outside the vocabulary of %d", id, w.m.cfg.Vocab)
		}
	}
	return nil
}

func (w *Window) checkRows(logits [][]float32) error {
	for i, row := range logits {
		if len(row) != w.m.cfg.Vocab {
			return fmt.Errorf("whisper: logit row %d holds %d values, want %d", i, len(row), w.m.cfg.Vocab)
		}
	}
	return nil
}

// run feeds w.ids ([beams, n] tokens at positions pos…pos+n−1) through the
// decoder, appends their keys and values to the caches and writes logits:
// for Start (at given) those of hypothesis 0 at the prefix positions at, for
// Step the last position of every hypothesis.
func (w *Window) run(ctx context.Context, n int, at []int, logits [][]float32) error {
	m := w.m
	sp, err := w.program(ctx, stepKey{n: n, length: attendLength(w.pos+n, m.cfg.TextCtx), rows: len(at)})
	if err != nil {
		return fmt.Errorf("whisper: decoder: %w", err)
	}
	w.scratch = append(w.scratch[:0], int64(w.pos))
	if err := sp.prog.Set(ctx, sp.pos, i64Bytes(w.scratch)); err != nil {
		return fmt.Errorf("whisper: decoder: %w", err)
	}
	if at != nil {
		w.scratch = w.scratch[:0]
		for _, p := range at {
			w.scratch = append(w.scratch, int64(p))
		}
		if err := sp.prog.Set(ctx, sp.at, i64Bytes(w.scratch)); err != nil {
			return fmt.Errorf("whisper: decoder: %w", err)
		}
	}
	if err := sp.prog.Set(ctx, sp.ids, i64Bytes(w.ids)); err != nil {
		return fmt.Errorf("whisper: decoder: %w", err)
	}
	if err := sp.prog.Run(ctx); err != nil {
		return fmt.Errorf("whisper: decoder: %w", err)
	}
	if err := w.readLogits(ctx, sp.prog, logits); err != nil {
		return fmt.Errorf("whisper: decoder: %w", err)
	}
	w.pos += n
	return nil
}

// readLogits reads the program's logits, one row a hypothesis or prefix
// position, into logits. A single row (a greedy step) is read in place:
// through a scratch it cost one more pass over the vocabulary's 207 KB a
// token on the host, beside a GPU step of about 0.25 ms.
func (w *Window) readLogits(ctx context.Context, prog *graph.Program, logits [][]float32) error {
	if len(logits) == 1 {
		return prog.ReadF32(ctx, 0, logits[0])
	}
	V := w.m.cfg.Vocab
	w.logits = slices.Grow(w.logits[:0], len(logits)*V)[:len(logits)*V]
	if err := prog.ReadF32(ctx, 0, w.logits); err != nil {
		return err
	}
	for i, row := range logits {
		copy(row, w.logits[i*V:(i+1)*V])
	}
	return nil
}

// program returns the cache's compiled decoder program for key, building
// it the first time: ids [beams, n], the position of the first token, and
// for Start the prefix positions whose logits are read.
func (w *Window) program(ctx context.Context, key stepKey) (*stepProgram, error) {
	c := w.cache
	if sp := c.steps[key]; sp != nil {
		if i := slices.Index(c.starts, key); i >= 0 {
			c.starts = append(slices.Delete(c.starts, i, i+1), key)
		}
		return sp, nil
	}
	m, B := w.m, w.beams
	g := graph.New()
	sp := &stepProgram{
		ids: g.Input("ids", graph.I64, graph.Shape{B, key.n}),
		pos: g.Input("position", graph.I64, graph.Shape{1}),
	}
	positions := sp.pos.Add(g.Arange(0, 1, key.n, graph.I64)) // pos … pos+n−1
	a := m.stepArith(g, B)
	x := m.dec.forward(a, sp.ids, positions, key.length, decoderPass{
		crossK: w.s.crossK, crossV: w.s.crossV,
		kv: &selfKV{k: w.cache.k, v: w.cache.v, pos: sp.pos, length: key.length},
	})
	var rows graph.Tensor
	if key.rows > 0 {
		sp.at = g.Input("at", graph.I64, graph.Shape{key.rows})
		rows = x.Slice(0, 0, 1).Reshape(key.n, m.cfg.DModel).Gather(0, sp.at)
	} else {
		rows = x.Reshape(B, m.cfg.DModel)
	}
	out := m.dec.logits(a, rows)
	prog, err := m.eng.Compile(ctx, out)
	if err != nil {
		return nil, err
	}
	sp.prog = prog
	c.steps[key] = sp
	if key.rows > 0 {
		if len(c.starts) == maxStarts {
			c.steps[c.starts[0]].prog.Close()
			delete(c.steps, c.starts[0])
			c.starts = slices.Delete(c.starts, 0, 1)
		}
		c.starts = append(c.starts, key)
	}
	return sp, nil
}

func i64Bytes(v []int64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 8*len(v))
}
