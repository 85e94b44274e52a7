package whisper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tensorforge/forge/graph"
)

// Batch runs the greedy decoder steps of several windows as one program:
// each window's sequence sits in a slot of the batch's own caches
// ([size, …] per layer) at a length of its own, so a step is one pass over
// the decoder weights for every sequence instead of one per sequence. That
// is what fills a GPU (and, on a CPU, reads the weights once for all rows)
// when many recordings are transcribed at once.
//
// A window joins with Audio.UseBatch (TranscribeMany does this for every
// recording of 16 or more on a GPU). Its Start still runs alone (the prefix, whatever its length,
// in one program); its first Step copies the window's encoder keys and
// values and its self-attention cache into a free slot, and from then on
// its steps wait for those of the other windows in the batch, up to a
// moment, and run with them. Beam search and best-of sampling (more than
// one hypothesis) stay on the window's own decoder. A decode that ends
// (decode.Finisher) stops holding the others up.
//
// The results equal the window's own decoder's up to the order of
// floating-point sums in the backend's batched kernels (on the CPU they
// have been bit for bit). Batch is safe for concurrent use by its windows;
// close it after them.
type Batch struct {
	m    *Model
	size int

	crossK, crossV []*graph.State // per layer: [size, heads, dh, 1500]
	selfK, selfV   []*graph.State // per layer: [size, 448, d]
	// One slot's worth of each, where a sequence moving to a lower slot
	// passes through.
	moveK, moveV, moveSelfK, moveSelfV []*graph.State

	run    sync.Mutex // held while a program reads or writes the batch's states
	out    [2]readBack
	turn   int // of out, for the next round
	steps  map[batchKey]*batchStep
	copies map[copyKey]*slotCopy // by the window state (*session, *kvCache) or the batch itself (moves)

	mu      sync.Mutex
	owner   []*Window      // per slot: the window in it, or nil
	pos     []int64        // per slot: the position its next token takes
	active  int            // windows stepping in the batch (joined, decode not finished)
	min     int            // windows below which a formed batch dissolves
	formed  bool           // min windows have been in the batch since it was last empty
	solo    bool           // dissolving: windows step alone until the batch is empty
	pending []*stepRequest // steps waiting for the next round
	running bool           // a round is running
	closed  bool

	stats BatchStats
}

// BatchStats counts a Batch's work.
type BatchStats struct {
	Rounds    int64         // batched steps run
	Sequences int64         // sequence steps in them (Sequences/Rounds is the mean occupancy)
	Busy      time.Duration // time inside rounds: setting inputs, running, reading logits
	Moves     int64         // sequences moved to a lower slot as others left
	Alone     int64         // sequences sent on alone when the batch dissolved
}

// batchKey is what a batched step program's shape depends on.
type batchKey struct {
	slots  int // the first slots it runs (a power of two up to size, or size)
	length int // cache positions attended (attendLength)
	rows   int // logit rows read (a power of two up to slots)
}

// batchStep is a compiled batched decoder step and its inputs.
type batchStep struct {
	prog           *graph.Program
	ids, pos, rows graph.Tensor
}

// readBack is a buffer the logits of a round are read into, and the
// windows still copying their rows out of it.
type readBack struct {
	buf    []float32
	copied sync.WaitGroup
}

// slotCopy is a compiled copy of window states into a slot.
type slotCopy struct {
	prog *graph.Program
	slot graph.Tensor
}

// stepRequest is one window's token waiting for a round.
type stepRequest struct {
	slot   int
	token  int32
	logits []float32
	done   chan error
	// The round leaves the logits in src, a row of its read-back buffer,
	// and each window copies its own (side by side, not one after the
	// other in the round), then tells copied.
	src    []float32
	copied *sync.WaitGroup
}

// take copies the round's logits into the caller's row.
func (r *stepRequest) take(err error) error {
	if r.src != nil {
		copy(r.logits, r.src)
		r.src = nil
		r.copied.Done()
	}
	return err
}

// MaxBatch is the most sequences TranscribeMany decodes as one batch;
// recordings beyond it step alone.
const MaxBatch = 32

// batchMinSequences is how many windows a batch needs to be worth it: once
// it has had that many, and fewer remain, the rest step alone. On an H100
// a round of 8 of Whisper tiny's sequences took 1.5 ms, where 8 windows
// stepping alone from their own goroutines (their CUDA graphs overlap on
// separate streams) took 0.86 ms for a step each; a round of 32, 3.0 ms
// against 5.0.
const batchMinSequences = 16

// errAlone tells a window that the batch dissolved: its state is back in
// its own caches, and it steps alone.
var errAlone = errors.New("whisper: batch dissolved")

// batchLinger is how long a round waits for windows that joined but have
// not asked for their next step yet (between two steps a window only
// picks its token on the host: tens of microseconds).
const batchLinger = 2 * time.Millisecond

// NewBatch makes a batch of size slots for greedy decoder steps (see
// Batch). The f32 and bf16 models batch; the int8 model quantizes each
// sequence's activations on their own, which batches too.
func (m *Model) NewBatch(size int) (*Batch, error) {
	if size < 1 {
		return nil, fmt.Errorf("whisper: batch of %d sequences", size)
	}
	c := m.cfg
	H := c.DecoderHeads
	b := &Batch{m: m, size: size, steps: map[batchKey]*batchStep{}, copies: map[copyKey]*slotCopy{}, pos: make([]int64, size)}
	var err error
	if b.crossK, b.crossV, err = m.layerStates("batch.cross", graph.Shape{size, H, c.DModel / H, c.AudioCtx}); err != nil {
		return nil, err
	}
	if b.selfK, b.selfV, err = m.layerStates("batch.self", graph.Shape{size, c.TextCtx, c.DModel}); err != nil {
		b.closeStates()
		return nil, err
	}
	b.owner = make([]*Window, size)
	b.min = min(batchMinSequences, size)
	if b.moveK, b.moveV, err = m.layerStates("batch.move.cross", graph.Shape{1, H, c.DModel / H, c.AudioCtx}); err != nil {
		b.closeStates()
		return nil, err
	}
	if b.moveSelfK, b.moveSelfV, err = m.layerStates("batch.move.self", graph.Shape{1, c.TextCtx, c.DModel}); err != nil {
		b.closeStates()
		return nil, err
	}
	return b, nil
}

// Size returns the number of sequences the batch holds at once.
func (b *Batch) Size() int { return b.size }

// Stats returns what the batch has run so far.
func (b *Batch) Stats() BatchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Close releases the batch's state and programs. Close the windows that
// use it first; their later steps fail with ErrClosed.
func (b *Batch) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.run.Lock()
	defer b.run.Unlock()
	for _, s := range b.steps {
		s.prog.Close()
	}
	for _, c := range b.copies {
		c.prog.Close()
	}
	b.steps, b.copies = map[batchKey]*batchStep{}, map[copyKey]*slotCopy{}
	b.closeStates()
	return nil
}

func (b *Batch) closeStates() {
	for _, st := range slices.Concat(b.crossK, b.crossV, b.selfK, b.selfV, b.moveK, b.moveV, b.moveSelfK, b.moveSelfV) {
		st.Close()
	}
	b.crossK, b.crossV, b.selfK, b.selfV = nil, nil, nil, nil
	b.moveK, b.moveV, b.moveSelfK, b.moveSelfV = nil, nil, nil, nil
}

// join puts w's sequence into the batch: a slot (kept until the window
// closes), its encoder keys and values (once per window) and its
// self-attention cache as its own decoder left it. It reports false when
// every slot is taken; w then steps alone.
func (b *Batch) join(ctx context.Context, w *Window) (bool, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false, ErrClosed
	}
	if w.slot < 0 {
		free := slices.Index(b.owner, nil) // the lowest: rounds run over the first slots in use
		if free < 0 || b.solo {
			b.mu.Unlock()
			return false, nil
		}
		w.slot, b.owner[free] = free, w
		if b.usedLocked() >= b.min {
			b.formed = true
		}
	}
	b.mu.Unlock()

	// A round writes a placeholder at every idle slot's next position, so
	// the slot's position must change with its contents: both under run.
	b.run.Lock()
	defer b.run.Unlock()
	if err := b.copyIn(ctx, w); err != nil {
		return false, fmt.Errorf("whisper: batch: %w", err)
	}
	b.mu.Lock()
	b.pos[w.slot] = int64(w.pos)
	b.active++
	b.mu.Unlock()
	return true, nil
}

// copyIn copies w's window state into its slot; the caller holds b.run.
func (b *Batch) copyIn(ctx context.Context, w *Window) error {
	if !w.slotCross {
		if err := b.runCopy(ctx, w.s, true, slices.Concat(w.s.crossK, w.s.crossV), slices.Concat(b.crossK, b.crossV), w.slot); err != nil {
			return err
		}
		w.slotCross = true
	}
	if w.slotSelf {
		return nil
	}
	if err := b.runCopy(ctx, w.cache, true, slices.Concat(w.cache.k, w.cache.v), slices.Concat(b.selfK, b.selfV), w.slot); err != nil {
		return err
	}
	w.slotSelf = true
	return nil
}

// copyProgram returns the program that copies each state of src into the
// one of dst at the same index, compiling it the first time for key:
// whole into a slot of dst (the slot's axis 0; dst has a slot axis more,
// or the same shape with 1 there) when into, else a slot of src into dst
// at 0. Programs are few: the model pools its windows' state.
func (b *Batch) copyProgram(ctx context.Context, key any, into bool, src, dst []*graph.State) (*slotCopy, error) {
	k := copyKey{key, into}
	if c := b.copies[k]; c != nil {
		return c, nil
	}
	if len(b.copies) >= 64 { // state of windows long gone: start over
		for k, c := range b.copies {
			c.prog.Close()
			delete(b.copies, k)
		}
	}
	g := graph.New()
	slot := g.Input("slot", graph.I64, graph.Shape{1})
	at := slot
	if !into {
		at = g.ConstI64(graph.Shape{1}, []int64{0})
	}
	var effects []graph.Tensor
	for i := range src {
		x := g.ReadState(src[i])
		switch {
		case !into:
			x = x.Gather(0, slot)
		case x.Rank() < len(dst[i].Shape()):
			x = x.Unsqueeze(0)
		}
		// The program's output is one value of the updated state: the
		// write is what it is for, and the whole state would be copied
		// out.
		st := g.UpdateState(dst[i], x, 0, at)
		effects = append(effects, st.Reshape(st.Shape().Len()).Slice(0, 0, 1))
	}
	prog, err := b.m.eng.Compile(ctx, effects...)
	if err != nil {
		return nil, err
	}
	c := &slotCopy{prog: prog, slot: slot}
	b.copies[k] = c
	return c, nil
}

// copyKey names a copy program: the state it copies from or into, and
// which way.
type copyKey struct {
	state any
	into  bool
}

// runCopy runs the copy program for key at slot.
func (b *Batch) runCopy(ctx context.Context, key any, into bool, src, dst []*graph.State, slot int) error {
	c, err := b.copyProgram(ctx, key, into, src, dst)
	if err != nil {
		return err
	}
	return c.run(ctx, i64Bytes([]int64{int64(slot)}))
}

func (c *slotCopy) run(ctx context.Context, slot []byte) error {
	if err := c.prog.Set(ctx, c.slot, slot); err != nil {
		return err
	}
	return c.prog.Run(ctx)
}

// leave stops the batch waiting for w's steps (its decode ended, or it
// starts again alone); w keeps its slot.
func (b *Batch) leave(w *Window) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active--
	b.startLocked()
}

// release gives w's slot back when the window closes.
func (b *Batch) release(w *Window) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(w)
}

// releaseLocked frees w's slot; a formed batch left with fewer than min
// windows dissolves, and an empty one may form again.
func (b *Batch) releaseLocked(w *Window) {
	if w.slot < 0 {
		return
	}
	b.owner[w.slot] = nil
	b.pos[w.slot] = 0
	w.slot = -1
	switch used := b.usedLocked(); {
	case used == 0:
		b.formed, b.solo = false, false
	case b.formed && used < b.min:
		b.solo = true
	}
	w.slotCross, w.slotSelf = false, false
}

// step appends token to w's sequence in the next round and writes the
// logits of its next token.
func (b *Batch) step(ctx context.Context, w *Window, token int32, logits []float32) error {
	r := w.request
	if r == nil {
		r = &stepRequest{done: make(chan error, 1)}
		w.request = r
	}
	r.token, r.logits = token, logits
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	r.slot = w.slot // a round may move w to a lower slot, under b.mu
	b.pending = append(b.pending, r)
	b.startLocked()
	b.mu.Unlock()

	if w.linger == nil {
		w.linger = time.NewTimer(batchLinger)
	} else {
		w.linger.Reset(batchLinger)
	}
	defer w.linger.Stop()
	for {
		select {
		case err := <-r.done:
			return r.take(err)
		case <-w.linger.C:
			// Windows that joined are late: run without them.
			b.mu.Lock()
			if slices.Contains(b.pending, r) && !b.running {
				b.startRoundLocked()
			}
			b.mu.Unlock()
		case <-ctx.Done():
			b.mu.Lock()
			if i := slices.Index(b.pending, r); i >= 0 {
				b.pending = slices.Delete(b.pending, i, i+1)
				b.mu.Unlock()
				return fmt.Errorf("whisper: batch step: %w", ctx.Err())
			}
			b.mu.Unlock()
			return r.take(<-r.done) // in a round already: its result
		}
	}
}

// startLocked starts a round when every window stepping in the batch has
// asked for its next step.
func (b *Batch) startLocked() {
	if !b.running && len(b.pending) > 0 && len(b.pending) >= b.active {
		b.startRoundLocked()
	}
}

// startRoundLocked runs the pending steps as a round on a goroutine of its
// own, and the rounds that became due meanwhile after it.
func (b *Batch) startRoundLocked() {
	b.running = true
	reqs := b.pending
	b.pending = nil
	go func() {
		for len(reqs) > 0 {
			start := time.Now()
			err := b.round(reqs)
			busy := time.Since(start)
			b.mu.Lock()
			for _, r := range reqs {
				if err == nil {
					b.pos[r.slot]++
				}
			}
			// A dissolved round's windows step alone from here on.
			b.stats.Rounds++
			b.stats.Sequences += int64(len(reqs))
			b.stats.Busy += busy
			for _, r := range reqs {
				r.done <- err
			}
			reqs = nil
			if len(b.pending) > 0 && len(b.pending) >= b.active {
				reqs = b.pending
				b.pending = nil
			} else {
				b.running = false
			}
			b.mu.Unlock()
		}
	}()
}

// round runs one batched step for reqs (one per slot at most) over the
// first slots, as many as a power of two that holds the windows in the
// batch (after moving windows from the slots past them into free ones
// below): those without a request run on a placeholder token at their
// next position, which their own next step overwrites before it is read.
func (b *Batch) round(reqs []*stepRequest) error {
	ctx := context.Background() // a round serves several callers; each waits on its own context
	b.run.Lock()
	defer b.run.Unlock()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	if b.solo {
		err := b.dissolveLocked(ctx, reqs)
		b.mu.Unlock()
		if err != nil {
			return fmt.Errorf("whisper: batch: %w", err)
		}
		return errAlone
	}
	if err := b.compactLocked(ctx, reqs); err != nil {
		b.mu.Unlock()
		return fmt.Errorf("whisper: batch: %w", err)
	}
	k := b.slotsLocked()
	ids := make([]int64, k)
	pos := make([]int64, b.size)
	need := 1
	for s := range b.size {
		pos[s] = min(b.pos[s], int64(b.m.cfg.TextCtx-1))
	}
	rows := make([]int64, 0, len(reqs))
	for _, r := range reqs {
		ids[r.slot] = int64(r.token)
		need = max(need, int(pos[r.slot])+1)
		rows = append(rows, int64(r.slot))
	}
	b.mu.Unlock()
	R := 1
	for R < len(rows) {
		R *= 2
	}
	R = min(R, k)
	for len(rows) < R {
		rows = append(rows, rows[0])
	}
	bs, err := b.program(ctx, batchKey{slots: k, length: attendLength(need, b.m.cfg.TextCtx), rows: R})
	if err != nil {
		return fmt.Errorf("whisper: batch step: %w", err)
	}
	for _, in := range []struct {
		t graph.Tensor
		v []int64
	}{{bs.ids, ids}, {bs.pos, pos}, {bs.rows, rows}} {
		if err := bs.prog.Set(ctx, in.t, i64Bytes(in.v)); err != nil {
			return fmt.Errorf("whisper: batch step: %w", err)
		}
	}
	if err := bs.prog.Run(ctx); err != nil {
		return fmt.Errorf("whisper: batch step: %w", err)
	}
	// Two read-back buffers take turns, so the windows of one round copy
	// their rows while the next runs; a buffer's last readers are done
	// long before its turn comes again, but it waits for them.
	V := b.m.cfg.Vocab
	turn := &b.out[b.turn]
	b.turn ^= 1
	turn.copied.Wait()
	turn.buf = slices.Grow(turn.buf[:0], R*V)[:R*V]
	if err := bs.prog.ReadF32(ctx, 0, turn.buf); err != nil {
		return fmt.Errorf("whisper: batch step: %w", err)
	}
	turn.copied.Add(len(reqs))
	for i, r := range reqs {
		r.src, r.copied = turn.buf[i*V:(i+1)*V], &turn.copied
	}
	return nil
}

// usedLocked returns how many slots hold a window.
func (b *Batch) usedLocked() int {
	used := 0
	for _, w := range b.owner {
		if w != nil {
			used++
		}
	}
	return used
}

// slotsLocked returns how many of the first slots a round runs: the
// least power of two (or the size) that holds every window in the batch.
func (b *Batch) slotsLocked() int {
	used := b.usedLocked()
	k := 1
	for k < used {
		k *= 2
	}
	return min(k, b.size)
}

// compactLocked moves the windows in slots past the round's first ones
// into free slots below (a slot's keys, values, cache and position), so
// that a batch whose sequences end at different times runs fewer slots,
// not the same number for its last few.
func (b *Batch) compactLocked(ctx context.Context, reqs []*stepRequest) error {
	k := b.slotsLocked()
	for j := b.size - 1; j >= k; j-- {
		w := b.owner[j]
		if w == nil {
			continue
		}
		i := slices.Index(b.owner, nil)
		if err := b.move(ctx, j, i); err != nil {
			return err
		}
		b.owner[i], b.owner[j] = w, nil
		b.pos[i], b.pos[j] = b.pos[j], 0
		b.stats.Moves++
		w.slot = i
		for _, r := range slices.Concat(reqs, b.pending) {
			if r.slot == j {
				r.slot = i
			}
		}
	}
	return nil
}

// dissolveLocked copies the caches of reqs' windows back from their slots
// into the windows' own and frees the slots; the windows step alone from
// this request on.
func (b *Batch) dissolveLocked(ctx context.Context, reqs []*stepRequest) error {
	for _, r := range reqs {
		w := b.owner[r.slot]
		if err := b.runCopy(ctx, w.cache, false, slices.Concat(b.selfK, b.selfV), slices.Concat(w.cache.k, w.cache.v), r.slot); err != nil {
			return err
		}
		b.active--
		b.stats.Alone++
		b.releaseLocked(w)
		w.slotCross, w.slotSelf = false, false
	}
	return nil
}

// move copies slot from's state into slot to, through the move states.
func (b *Batch) move(ctx context.Context, from, to int) error {
	slots := slices.Concat(b.crossK, b.crossV, b.selfK, b.selfV)
	moving := slices.Concat(b.moveK, b.moveV, b.moveSelfK, b.moveSelfV)
	if err := b.runCopy(ctx, b, false, slots, moving, from); err != nil {
		return err
	}
	return b.runCopy(ctx, b, true, moving, slots, to)
}

// program returns the batched step for key, compiling it the first time:
// ids [slots, 1] of the first slots, positions [size] (one per slot),
// logits of the slots listed in rows.
func (b *Batch) program(ctx context.Context, key batchKey) (*batchStep, error) {
	if bs := b.steps[key]; bs != nil {
		return bs, nil
	}
	m, S, k := b.m, b.size, key.slots
	g := graph.New()
	bs := &batchStep{
		ids:  g.Input("ids", graph.I64, graph.Shape{k, 1}),
		pos:  g.Input("positions", graph.I64, graph.Shape{S}),
		rows: g.Input("rows", graph.I64, graph.Shape{key.rows}),
	}
	a := m.stepArith(g, k)
	x := m.dec.forward(a, bs.ids, bs.pos.Slice(0, 0, k).Reshape(k, 1), key.length, decoderPass{
		crossK: b.crossK, crossV: b.crossV, slots: k,
		kv: &selfKV{k: b.selfK, v: b.selfV, pos: bs.pos, length: key.length, slots: k},
	})
	out := m.dec.logits(a, x.Reshape(k, m.cfg.DModel).Gather(0, bs.rows))
	prog, err := m.eng.Compile(ctx, out)
	if err != nil {
		return nil, err
	}
	bs.prog = prog
	b.steps[key] = bs
	return bs, nil
}
