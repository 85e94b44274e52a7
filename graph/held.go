package graph

import (
	"context"
	"fmt"
	"sync"

	"github.com/tensorforge/forge/kernels"
)

// Held is a tensor's value left in the engine's backend memory by
// EvalHeld, for a later graph to read as an input (Graph.InputHeld). A
// model whose stages are separate graphs (because a stage's shapes depend
// on values the host must see first, or because the CPU runs independent
// stages side by side) hands its intermediates over this way: as Values
// they would go to the host and back, which on a GPU is a copy each way
// over the bus, a wait for the queue, and the host memory to hold them
// (Kokoro's generator sources are 33 MB for a 10-s chunk).
//
// Close gives the memory back to the engine. A Held may be read by several
// graphs, but not closed while a program that reads it is open.
type Held struct {
	e     *Engine
	dtype DType
	shape Shape
	size  int // bytes the program asked for (the pool's accounting)

	mu  sync.Mutex
	buf kernels.Buffer
}

// DType returns the value's element type.
func (h *Held) DType() DType { return h.dtype }

// Shape returns the value's shape.
func (h *Held) Shape() Shape { return h.shape }

// buffer returns the backend buffer, or nil once closed.
func (h *Held) buffer() kernels.Buffer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf
}

// Value copies the value to the host.
func (h *Held) Value(ctx context.Context) (*Value, error) {
	b := h.buffer()
	if b == nil {
		return nil, fmt.Errorf("graph: read of a closed held value %s%v", h.dtype, h.shape)
	}
	v := &Value{DType: h.dtype, Shape: h.shape.Clone(), Data: make([]byte, h.shape.Len()*h.dtype.Size())}
	if len(v.Data) == 0 {
		return v, nil
	}
	err := h.e.withQueue(ctx, func(q kernels.Queue) error { return q.Read(ctx, v.Data, b, 0) })
	if err != nil {
		return nil, fmt.Errorf("graph: read of held value %s%v: %w", h.dtype, h.shape, err)
	}
	return v, nil
}

// Close gives the memory back to the engine. Closing twice is harmless.
func (h *Held) Close() {
	h.mu.Lock()
	b := h.buf
	h.buf = nil
	h.mu.Unlock()
	if b == nil {
		return
	}
	h.e.putBuf(false, b, h.size)
}

// EvalHeld is Eval with the outputs left in the backend's memory: each
// output tensor's Held (nil for effect tokens), which the caller closes.
// When EvalHeld returns, the program's work has finished. On a failure
// nothing stays held.
func (e *Engine) EvalHeld(ctx context.Context, outs ...Tensor) ([]*Held, error) {
	prog, err := e.evalProgram(ctx, outs)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := prog.q.Sync(ctx); err != nil {
		return nil, fmt.Errorf("graph: eval: %w", err)
	}
	held := make([]*Held, len(outs))
	k := 0
	for i, t := range outs {
		if t.node().op == opAssign {
			continue
		}
		held[i] = prog.hold(k)
		k++
	}
	return held, nil
}

// hold hands output k's buffer over to a Held: the program no longer
// returns it on Close.
func (p *Program) hold(k int) *Held {
	o := p.p.outputs[k]
	slot := p.p.outputSlot(k)
	h := &Held{e: p.e, dtype: o.dtype, shape: o.shape.Clone(), size: o.bytes, buf: p.bufs[slot]}
	p.lend(slot)
	return h
}

// lend marks slot's buffer as not the program's to give back: a held
// input's, or an output handed to a Held.
func (p *Program) lend(slot int) {
	if p.lent == nil {
		p.lent = make([]bool, len(p.bufs))
	}
	p.lent[slot] = true
}

// InputHeld adds an input bound to h: programs read its memory in place,
// with no copy. The graph must run on h's engine, with h open.
func (g *Graph) InputHeld(name string, h *Held) Tensor {
	if h == nil || h.buffer() == nil {
		return g.failf("input "+name, "held value is nil or closed")
	}
	t := g.Input(name, h.dtype, h.shape)
	if t.Err() != nil {
		return t
	}
	t.node().held = h
	return t
}

// bindHeld makes input k read held value h's buffer.
func (p *Program) bindHeld(k int, h *Held) error {
	if h.e != p.e {
		return fmt.Errorf("graph: input %q is held by another engine", p.g.nodes[p.inputs[k]].name)
	}
	b := h.buffer()
	if b == nil {
		return fmt.Errorf("graph: input %q: its held value is closed", p.g.nodes[p.inputs[k]].name)
	}
	slot := p.p.inputSlot(k)
	p.bufs[slot] = b
	p.lend(slot)
	return nil
}
