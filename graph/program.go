package graph

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
)

// newProgram binds a plan to buffers of its own; brief says the program
// lives for one run (see getBuf), once that it is the only run of its plan
// in the engine's life (folding constants; see Program.getBuf). The caller
// has counted the program as a user of p (lookupPlan, addPlan); Close, or a
// failure here, ends that.
func (e *Engine) newProgram(p *plan, g *Graph, order []uint32, brief, once bool) (*Program, error) {
	prog := &Program{e: e, p: p, g: g, bufs: make([]kernels.Buffer, p.nslots), brief: brief, once: once}
	var err error
	if prog.q, err = e.getQueue(false); err != nil {
		e.donePlan(p)
		return nil, err
	}
	if prog.bufs[0], err = prog.getBuf(p.arenaBytes); err != nil {
		prog.Close()
		return nil, fmt.Errorf("graph: arena of %d bytes: %w", p.arenaBytes, err)
	}
	for k, b := range p.consts {
		prog.bufs[p.constSlot(k)] = b
	}
	prog.inputs = make([]uint32, len(p.inputs))
	for k, in := range p.inputs {
		prog.inputs[k] = order[in.pos]
		if h := g.nodes[prog.inputs[k]].held; h != nil {
			if err := prog.bindHeld(k, h); err != nil {
				prog.Close()
				return nil, err
			}
			continue
		}
		if prog.bufs[p.inputSlot(k)], err = prog.getBuf(in.bytes); err != nil {
			prog.Close()
			return nil, fmt.Errorf("graph: input buffer: %w", err)
		}
	}
	prog.outputs = make([]uint32, len(p.outputs))
	for k, out := range p.outputs {
		prog.outputs[k] = order[out.pos]
		if prog.bufs[p.outputSlot(k)], err = prog.getBuf(out.bytes); err != nil {
			prog.Close()
			return nil, fmt.Errorf("graph: output buffer: %w", err)
		}
	}
	for k, pos := range p.states {
		s := g.nodes[order[pos]].state
		if s.buf == nil {
			prog.Close()
			return nil, fmt.Errorf("graph: state %s is closed", s.name)
		}
		prog.bufs[p.stateSlot(k)] = s.buf
	}
	if p.hostRuns > 0 {
		if err := prog.bindHost(); err != nil {
			prog.Close()
			return nil, err
		}
	}
	return prog, nil
}

// Eval compiles (or reuses) a program for outs, feeds inputs that were
// created with data (InputF32 and friends), runs it and returns the outputs
// on the host. Effect tokens among outs yield no Value (nil). When Eval
// returns, the program's work, effects on States included, has finished.
func (e *Engine) Eval(ctx context.Context, outs ...Tensor) ([]*Value, error) {
	prog, err := e.evalProgram(ctx, outs)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	vals := make([]*Value, len(outs))
	k := 0
	for i, t := range outs {
		if t.node().op == opAssign {
			continue
		}
		v, err := prog.Output(ctx, k)
		if err != nil {
			return nil, err
		}
		vals[i] = v
		k++
	}
	if err := prog.q.Sync(ctx); err != nil {
		return nil, fmt.Errorf("graph: eval: %w", err)
	}
	return vals, nil
}

// evalProgram compiles outs into a program for one run (Eval, EvalHeld),
// feeds the inputs bound to data and enqueues the run; the caller reads
// the outputs and closes the program.
func (e *Engine) evalProgram(ctx context.Context, outs []Tensor) (*Program, error) {
	prog, err := e.compile(ctx, true, outs)
	if err != nil {
		return nil, err
	}
	if err := prog.bindAttached(ctx); err != nil {
		prog.Close()
		return nil, err
	}
	if err := prog.Run(ctx); err != nil {
		prog.Close()
		return nil, err
	}
	return prog, nil
}

// Program is a compiled graph bound to its own buffers and queue. Set
// inputs, Run, read outputs; repeat. A Program is used by one goroutine at a
// time; programs of one engine may run concurrently.
type Program struct {
	e       *Engine
	p       *plan
	g       *Graph
	q       kernels.Queue
	bufs    []kernels.Buffer
	inputs  []uint32 // node ids of the compiling graph
	outputs []uint32

	// Partitioned programs only: the host backend's queue and buffer table
	// (constants shared with the engine, mirrors of everything else).
	hq      kernels.Queue
	hbufs   []kernels.Buffer
	hmem    [][]byte // host bytes of each mirror
	owned   []bool   // mirrors this program allocated (and returns on Close)
	unified bool     // mirrors alias device memory: no copies, only waits

	brief bool   // lives for one Eval (see Engine.getBuf)
	once  bool   // the only run of its plan (see getBuf)
	lent  []bool // slots whose buffers are not the program's to give back (held values)
}

// Steps returns the number of kernel launches one Run makes.
func (p *Program) Steps() int { return len(p.p.steps) }

// HostSteps returns how many of those run on the host backend because the
// engine's backend does not support them.
func (p *Program) HostSteps() int { return p.p.hostSteps }

// ArenaBytes returns the size of the program's intermediate arena.
func (p *Program) ArenaBytes() int { return p.p.arenaBytes }

// NumInputs returns how many placeholders the program reads.
func (p *Program) NumInputs() int { return len(p.inputs) }

func (p *Program) inputIndex(t Tensor) (int, error) {
	if t.g != p.g {
		return 0, fmt.Errorf("graph: program input: tensor belongs to another graph")
	}
	for k, id := range p.inputs {
		if id == t.id {
			return k, nil
		}
	}
	return 0, fmt.Errorf("graph: program input: %v is not an input of this program", t)
}

// Set copies raw little-endian bytes into the input placeholder t.
func (p *Program) Set(ctx context.Context, t Tensor, data []byte) error {
	k, err := p.inputIndex(t)
	if err != nil {
		return err
	}
	return p.SetIndex(ctx, k, data)
}

// SetIndex copies raw bytes into input k (in order of creation).
func (p *Program) SetIndex(ctx context.Context, k int, data []byte) error {
	if k < 0 || k >= len(p.inputs) {
		return fmt.Errorf("graph: program has %d inputs, not %d", len(p.inputs), k+1)
	}
	if err := p.checkInput(k, data); err != nil {
		return err
	}
	if p.isLent(p.p.inputSlot(k)) {
		return fmt.Errorf("graph: input %s reads a held value, which Set would overwrite", p.g.nodes[p.inputs[k]].name)
	}
	if len(data) == 0 {
		return nil
	}
	return p.q.Write(ctx, p.bufs[p.p.inputSlot(k)], 0, data)
}

// checkInput reports whether data is as long as input k.
func (p *Program) checkInput(k int, data []byte) error {
	if in := p.p.inputs[k]; len(data) != in.bytes {
		return fmt.Errorf("graph: input %s %s%v needs %d bytes, got %d", p.g.nodes[p.inputs[k]].name, in.dtype, in.shape, in.bytes, len(data))
	}
	return nil
}

// SetF32 copies float32 values into the input placeholder t.
func (p *Program) SetF32(ctx context.Context, t Tensor, data []float32) error {
	return p.Set(ctx, t, f32Bytes(data))
}

func (p *Program) bindAttached(ctx context.Context) error {
	var ws []kernels.Write
	for k, id := range p.inputs {
		n := &p.g.nodes[id]
		if p.p.inputs[k].bytes == 0 || n.held != nil {
			continue
		}
		parts := n.parts
		if parts == nil {
			if n.data == nil {
				return fmt.Errorf("graph: input %q has no data (use Program.Set or create it with data)", n.name)
			}
			if err := p.checkInput(k, n.data); err != nil {
				return err
			}
			parts = [][]byte{n.data}
		}
		off := 0
		for _, b := range parts {
			ws = append(ws, kernels.Write{Dst: p.bufs[p.p.inputSlot(k)], Off: off, Src: b})
			off += len(b)
		}
	}
	if bw, ok := p.q.(kernels.BatchWriter); ok && len(ws) > 1 {
		return bw.WriteBatch(ctx, ws)
	}
	for _, w := range ws {
		if err := p.q.Write(ctx, w.Dst, w.Off, w.Src); err != nil {
			return err
		}
	}
	return nil
}

// Run enqueues every step on the program's queue; reading an output waits
// for them. It stops early with the context's error when ctx is cancelled.
func (p *Program) Run(ctx context.Context) error {
	if p.bufs == nil {
		return fmt.Errorf("graph: run of a closed program")
	}
	for i := range p.p.runs {
		r := &p.p.runs[i]
		var err error
		switch {
		case r.host:
			err = p.runHost(ctx, r)
		case r.plan != nil:
			if err = ctx.Err(); err == nil {
				err = r.plan.Run(ctx, p.q, p.bufs)
			}
			if err != nil {
				err = fmt.Errorf("graph: run steps %d-%d: %w", r.lo, r.hi-1, err)
			}
		default:
			err = launch(ctx, p.q, p.p.steps, r.lo, r.hi, p.bufs)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// launch enqueues steps[lo:hi] on q one by one.
func launch(ctx context.Context, q kernels.Queue, steps []kernels.Step, lo, hi int, bufs []kernels.Buffer) error {
	done := ctx.Done()
	for i := lo; i < hi; i++ {
		select {
		case <-done:
			return fmt.Errorf("graph: run: %w", ctx.Err())
		default:
		}
		s := &steps[i]
		if err := q.Launch(ctx, s, bufs); err != nil {
			return fmt.Errorf("graph: run step %d (%s): %w", i, s.Name, err)
		}
	}
	return nil
}

// Sync waits until the work Run enqueued has finished, effects on States
// included: what a program that only assigns States needs before another
// program reads them (reading an output waits by itself).
func (p *Program) Sync(ctx context.Context) error {
	if p.bufs == nil {
		return fmt.Errorf("graph: sync of a closed program")
	}
	if err := p.q.Sync(ctx); err != nil {
		return fmt.Errorf("graph: sync: %w", err)
	}
	return nil
}

// NumOutputs returns how many values the program produces.
func (p *Program) NumOutputs() int { return len(p.outputs) }

// Read copies output k's raw bytes into dst (len must match), after the
// program's queue has finished its work.
func (p *Program) Read(ctx context.Context, k int, dst []byte) error {
	if k < 0 || k >= len(p.outputs) {
		return fmt.Errorf("graph: program has %d outputs, not %d", len(p.outputs), k+1)
	}
	o := p.p.outputs[k]
	if len(dst) != o.bytes {
		return fmt.Errorf("graph: output %d %s%v has %d bytes, destination %d", k, o.dtype, o.shape, o.bytes, len(dst))
	}
	if o.bytes == 0 {
		return nil
	}
	return p.q.Read(ctx, dst, p.bufs[p.p.outputSlot(k)], 0)
}

// ReadF32 copies float32 output k into dst.
func (p *Program) ReadF32(ctx context.Context, k int, dst []float32) error {
	if k >= 0 && k < len(p.outputs) && p.p.outputs[k].dtype != F32 {
		return fmt.Errorf("graph: output %d is %s, not f32", k, p.p.outputs[k].dtype)
	}
	return p.Read(ctx, k, f32Bytes(dst))
}

// Output reads output k into a new host Value.
func (p *Program) Output(ctx context.Context, k int) (*Value, error) {
	if k < 0 || k >= len(p.outputs) {
		return nil, fmt.Errorf("graph: program has %d outputs, not %d", len(p.outputs), k+1)
	}
	o := p.p.outputs[k]
	v := &Value{DType: o.dtype, Shape: o.shape.Clone(), Data: make([]byte, o.bytes)}
	if err := p.Read(ctx, k, v.Data); err != nil {
		return nil, err
	}
	return v, nil
}

// Close waits for the program's work, then returns its buffers and queues
// to the engine for reuse (and releases its compiled plan if the engine's
// cache dropped it meanwhile). Closing twice is harmless.
func (p *Program) Close() {
	if p.bufs == nil {
		return
	}
	e := p.e
	if p.q != nil {
		// Buffers go back to the pool only once no work can touch them.
		_ = p.q.Sync(context.Background())
		e.putQueue(false, p.q)
	}
	p.putBuf(p.bufs[0], p.p.arenaBytes)
	for k, in := range p.p.inputs {
		if s := p.p.inputSlot(k); !p.isLent(s) {
			p.putBuf(p.bufs[s], in.bytes)
		}
	}
	for k, out := range p.p.outputs {
		if s := p.p.outputSlot(k); !p.isLent(s) {
			p.putBuf(p.bufs[s], out.bytes)
		}
	}
	if p.hq != nil {
		_ = p.hq.Sync(context.Background())
		e.putQueue(true, p.hq)
	}
	for i, b := range p.hbufs {
		if p.owned[i] {
			e.putBuf(true, b, p.bufs[i].Bytes())
		}
	}
	p.bufs, p.hbufs = nil, nil
	e.donePlan(p.p)
}

// isLent reports whether slot's buffer is a held value's (see lend).
func (p *Program) isLent(slot int) bool { return p.lent != nil && p.lent[slot] }

// getBuf returns a device buffer of size bytes for the program, from the
// engine's pool; for a program that runs once, straight from the backend:
// neither its buffers nor its needs then stay in the pool, whose bound
// follows the most that open programs needed. Folding a model's weights
// needs them all at once, its largest program by far: Whisper base's bf16
// encoder folded 105 MB, and the pool then kept 180 MB of idle buffers.
func (p *Program) getBuf(size int) (kernels.Buffer, error) {
	if p.once {
		return p.e.backend.Alloc(size)
	}
	return p.e.getBuf(false, size, p.brief)
}

// putBuf gives back a buffer from getBuf, asked for as size bytes.
func (p *Program) putBuf(b kernels.Buffer, size int) {
	if !p.once {
		p.e.putBuf(false, b, size)
	} else if b != nil {
		p.e.backend.Free(b)
	}
}

// Value is a tensor's contents on the host.
type Value struct {
	DType DType
	Shape Shape
	Data  []byte // little-endian elements, row-major
}

// F32 returns the data as float32s (no copy). It panics if the dtype is not
// F32, which is a programming error, not an input error.
func (v *Value) F32() []float32 {
	if v.DType != F32 {
		panic(fmt.Sprintf("graph: Value.F32 on %s", v.DType))
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(v.Data))), len(v.Data)/4)
}

// I64 returns the data as int64s (no copy); the dtype must be I64.
func (v *Value) I64() []int64 {
	if v.DType != I64 {
		panic(fmt.Sprintf("graph: Value.I64 on %s", v.DType))
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(v.Data))), len(v.Data)/8)
}

// Float64s converts the data of any dtype to float64s.
func (v *Value) Float64s() []float64 {
	n := v.Shape.Len()
	out := make([]float64, n)
	for i := range out {
		out[i] = elemAt(v.Data, v.DType, i)
	}
	return out
}

// elemAt reads element i of raw data as float64.
func elemAt(b []byte, dt DType, i int) float64 {
	switch dt {
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case F16:
		return float64(kernels.F16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
	case BF16:
		return float64(kernels.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:])))
	case I32:
		return float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	case I64:
		return float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
	case U8, Bool:
		return float64(b[i])
	case I8:
		return float64(int8(b[i]))
	}
	return math.NaN()
}

func f32At(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}
