package vad

import (
	"context"
	"fmt"

	"github.com/tensorforge/forge/graph"
)

// Batch scores many streams at once: each call takes one chunk from every
// stream and runs the network once for all of them, carrying each stream's
// LSTM state and context as a Detector does. On the CPU fast path (see
// Model.Path) every layer is one product over all the streams' rows, so a
// weight is read once per four streams rather than once per stream; on an
// engine it is one program run (one launch per kernel on a GPU). It is what a service listening to many
// callers uses instead of a Detector per caller. A Batch is not safe for
// concurrent use.
type Batch struct {
	b    *branch
	n    int
	fs   *fastStreams // the fast path: every layer one product over all streams
	prog *graph.Program
	st   *graph.State // [2, n, Hidden]
	x    graph.Tensor // [n, context+chunk]
	in   []float32    // per stream: context followed by the new chunk
	out  []float32
	zero []byte
}

// NewBatch compiles the network for streams streams at rate (16000, or
// 8000 where the weights have that branch), all starting from silence.
func (m *Model) NewBatch(ctx context.Context, rate, streams int) (*Batch, error) {
	if streams < 1 {
		return nil, fmt.Errorf("vad: a batch of %d streams", streams)
	}
	b, err := m.branch(rate)
	if err != nil {
		return nil, err
	}
	if net := m.fast[rate]; net != nil {
		return &Batch{b: b, n: streams, fs: newFastStreams(net, streams), out: make([]float32, streams)}, nil
	}
	st, err := m.eng.NewState(fmt.Sprintf("vad%d.batch%d", rate, streams), graph.F32, graph.Shape{2, streams, Hidden})
	if err != nil {
		return nil, fmt.Errorf("vad: %w", err)
	}
	g := graph.New()
	x := g.Input("input", graph.F32, graph.Shape{streams, b.context + b.chunk})
	s := g.ReadState(st)
	prob, hN, cN := b.forward(x, s.Slice(0, 0, 1), s.Slice(0, 1, 2))
	prog, err := m.eng.Compile(ctx, prob, g.Assign(st, hN, 0, 0), g.Assign(st, cN, 0, 1))
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("vad: compile a batch of %d at %d Hz: %w", streams, rate, err)
	}
	return &Batch{b: b, n: streams, prog: prog, st: st, x: x,
		in: make([]float32, streams*(b.context+b.chunk)), out: make([]float32, streams),
		zero: make([]byte, 2*streams*Hidden*4)}, nil
}

// Streams returns how many streams the batch scores per call.
func (bt *Batch) Streams() int { return bt.n }

// ChunkSize returns the samples each stream contributes per call.
func (bt *Batch) ChunkSize() int { return bt.b.chunk }

// Reset starts every stream anew: zero state and context.
func (bt *Batch) Reset(ctx context.Context) error {
	if bt.fs != nil {
		bt.fs.reset()
		return nil
	}
	if bt.prog == nil {
		return ErrClosed
	}
	clear(bt.in)
	if err := bt.st.Write(ctx, bt.zero); err != nil {
		return fmt.Errorf("vad: batch reset: %w", err)
	}
	return nil
}

// Probs scores the next chunk of every stream (chunks[i] is stream i's,
// exactly ChunkSize samples) and writes stream i's speech probability to
// dst[i].
func (bt *Batch) Probs(ctx context.Context, chunks [][]float32, dst []float32) error {
	if bt.prog == nil && bt.fs == nil {
		return ErrClosed
	}
	if len(chunks) != bt.n || len(dst) != bt.n {
		return fmt.Errorf("vad: batch of %d streams given %d chunks and %d results", bt.n, len(chunks), len(dst))
	}
	w, c := bt.b.context+bt.b.chunk, bt.b.context
	for i, chunk := range chunks {
		if len(chunk) != bt.b.chunk {
			return fmt.Errorf("%w: stream %d: got %d samples, want %d at %d Hz", ErrChunkSize, i, len(chunk), bt.b.chunk, bt.b.rate)
		}
		if j := nonFinite(chunk); j >= 0 {
			return fmt.Errorf("%w: stream %d, sample %d of the chunk is %v", ErrNotFinite, i, j, chunk[j])
		}
		if bt.fs != nil {
			copy(bt.fs.input(i), chunk)
		} else {
			copy(bt.in[i*w+c:(i+1)*w], chunk)
		}
	}
	if bt.fs != nil {
		bt.fs.step(bt.out)
		copy(dst, bt.out)
		return nil
	}
	if err := bt.prog.SetF32(ctx, bt.x, bt.in); err != nil {
		return fmt.Errorf("vad: %w", err)
	}
	if err := bt.prog.Run(ctx); err != nil {
		return fmt.Errorf("vad: %w", err)
	}
	if err := bt.prog.ReadF32(ctx, 0, bt.out); err != nil {
		return fmt.Errorf("vad: %w", err)
	}
	copy(dst, bt.out)
	// Each stream's next context is the end of its input.
	for i := range bt.n {
		row := bt.in[i*w : (i+1)*w]
		copy(row[:c], row[w-c:])
	}
	return nil
}

// Close releases the batch's program and state.
func (bt *Batch) Close() {
	bt.fs = nil
	if bt.prog != nil {
		bt.prog.Close()
		bt.st.Close()
		bt.prog = nil
	}
}
