package graph

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
)

// Engine compiles graphs for one backend and caches what compilation
// produces: programs by graph structure and input shapes, device copies of
// weights, and folded weight-only subgraphs. An Engine is safe for
// concurrent use; the Programs it returns are not (give each goroutine its
// own, they share the engine's caches and weights).
type Engine struct {
	backend kernels.Backend

	mu       sync.Mutex
	plans    map[string]*plan
	params   map[paramKey]kernels.Buffer
	consts   map[string]kernels.Buffer
	folded   map[string]kernels.Buffer
	free     map[int][]kernels.Buffer // reusable program buffers by size
	compiles int64
}

type paramKey struct {
	ptr uintptr
	n   int
}

// NewEngine returns an engine that runs programs on b.
func NewEngine(b kernels.Backend) *Engine {
	return &Engine{
		backend: b,
		plans:   make(map[string]*plan),
		params:  make(map[paramKey]kernels.Buffer),
		consts:  make(map[string]kernels.Buffer),
		folded:  make(map[string]kernels.Buffer),
		free:    make(map[int][]kernels.Buffer),
	}
}

// Backend returns the engine's backend.
func (e *Engine) Backend() kernels.Backend { return e.backend }

// Compiles returns how many distinct programs the engine has compiled; a
// cache hit does not count.
func (e *Engine) Compiles() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.compiles
}

// constBuffer returns the engine's buffer for a param (by address) or
// constant (by content), wrapping it on first use.
func (e *Engine) constBuffer(n *node) (kernels.Buffer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n.op == opParam {
		k := paramKey{uintptr(unsafe.Pointer(unsafe.SliceData(n.data))), len(n.data)}
		if b, ok := e.params[k]; ok {
			return b, nil
		}
		b, err := e.backend.Wrap(n.data)
		if err != nil {
			return nil, fmt.Errorf("graph: param %s: %w", n.name, err)
		}
		e.params[k] = b
		return b, nil
	}
	k := string(appendNodeKey(nil, n, nil, nil))
	if b, ok := e.consts[k]; ok {
		return b, nil
	}
	data := n.data
	if len(data) == 0 {
		data = make([]byte, 1) // backends need a non-empty buffer
	}
	b, err := e.backend.Wrap(data)
	if err != nil {
		return nil, fmt.Errorf("graph: constant: %w", err)
	}
	e.consts[k] = b
	return b, nil
}

// getBuf returns a free buffer of at least size bytes: one of exactly that
// size, else the smallest up to twice as large, else a new one. Taking a
// larger one lets the programs of a new shape (the next sentence's length)
// run in memory that is already mapped instead of faulting in fresh pages,
// and keeps the free lists from growing with every distinct size.
func (e *Engine) getBuf(size int) (kernels.Buffer, error) {
	size = max(size, 1)
	e.mu.Lock()
	fit := size
	if len(e.free[size]) == 0 {
		fit = 0
		for s, l := range e.free {
			if len(l) > 0 && s > size && s <= 2*size && (fit == 0 || s < fit) {
				fit = s
			}
		}
	}
	if l := e.free[fit]; fit > 0 && len(l) > 0 {
		b := l[len(l)-1]
		e.free[fit] = l[:len(l)-1]
		e.mu.Unlock()
		return b, nil
	}
	e.mu.Unlock()
	return e.backend.Alloc(size)
}

func (e *Engine) putBuf(b kernels.Buffer) {
	if b == nil {
		return
	}
	e.mu.Lock()
	e.free[b.Bytes()] = append(e.free[b.Bytes()], b)
	e.mu.Unlock()
}

// Compile returns a program computing outs (tensors of one graph; effect
// tokens from Assign included). Compiling a graph whose structure and
// shapes match an earlier one reuses that compilation.
func (e *Engine) Compile(ctx context.Context, outs ...Tensor) (*Program, error) {
	if len(outs) == 0 {
		return nil, fmt.Errorf("graph: compile: no outputs requested")
	}
	g := outs[0].g
	ids := make([]uint32, len(outs))
	for i, t := range outs {
		if t.g == nil {
			return nil, fmt.Errorf("graph: compile: output %d is the zero Tensor", i)
		}
		if t.g != g {
			return nil, fmt.Errorf("graph: compile: output %d belongs to another graph", i)
		}
		if err := t.Err(); err != nil {
			return nil, err
		}
		ids[i] = t.id
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph: compile: %w", err)
	}
	c := newCompiler(e, g, ids, true)
	key := structureKey(g, c.order, c.pos, ids)
	e.mu.Lock()
	p := e.plans[key]
	e.mu.Unlock()
	if p == nil {
		var err error
		p, err = c.build()
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		if q := e.plans[key]; q != nil {
			p = q
		} else {
			e.plans[key] = p
			e.compiles++
		}
		e.mu.Unlock()
	}
	return e.newProgram(p, g, c.orig)
}

func (e *Engine) newProgram(p *plan, g *Graph, order []uint32) (*Program, error) {
	prog := &Program{e: e, p: p, g: g, bufs: make([]kernels.Buffer, p.nslots)}
	var err error
	if prog.bufs[0], err = e.getBuf(p.arenaBytes); err != nil {
		return nil, fmt.Errorf("graph: arena of %d bytes: %w", p.arenaBytes, err)
	}
	for k, b := range p.consts {
		prog.bufs[p.constSlot(k)] = b
	}
	prog.inputs = make([]uint32, len(p.inputs))
	for k, in := range p.inputs {
		prog.inputs[k] = order[in.pos]
		if prog.bufs[p.inputSlot(k)], err = e.getBuf(in.bytes); err != nil {
			prog.Close()
			return nil, fmt.Errorf("graph: input buffer: %w", err)
		}
	}
	prog.outputs = make([]uint32, len(p.outputs))
	for k, out := range p.outputs {
		prog.outputs[k] = order[out.pos]
		if prog.bufs[p.outputSlot(k)], err = e.getBuf(out.bytes); err != nil {
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
	return prog, nil
}

// Eval compiles (or reuses) a program for outs, feeds inputs that were
// created with data (InputF32 and friends), runs it and returns the outputs
// on the host. Effect tokens among outs yield no Value (nil).
func (e *Engine) Eval(ctx context.Context, outs ...Tensor) ([]*Value, error) {
	prog, err := e.Compile(ctx, outs...)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := prog.bindAttached(ctx); err != nil {
		return nil, err
	}
	if err := prog.Run(ctx); err != nil {
		return nil, err
	}
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
	return vals, nil
}

// Program is a compiled graph bound to its own buffers. Set inputs, Run,
// read outputs; repeat. It is not safe for concurrent use.
type Program struct {
	e       *Engine
	p       *plan
	g       *Graph
	bufs    []kernels.Buffer
	inputs  []uint32 // node ids of the compiling graph
	outputs []uint32
}

// Steps returns the number of kernel launches one Run makes.
func (p *Program) Steps() int { return len(p.p.steps) }

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
	in := p.p.inputs[k]
	if len(data) != in.bytes {
		return fmt.Errorf("graph: input %s %s%v needs %d bytes, got %d", p.g.nodes[p.inputs[k]].name, in.dtype, in.shape, in.bytes, len(data))
	}
	return p.e.backend.Write(ctx, p.bufs[p.p.inputSlot(k)], 0, data)
}

// SetF32 copies float32 values into the input placeholder t.
func (p *Program) SetF32(ctx context.Context, t Tensor, data []float32) error {
	return p.Set(ctx, t, f32Bytes(data))
}

func (p *Program) bindAttached(ctx context.Context) error {
	for k, id := range p.inputs {
		n := &p.g.nodes[id]
		if n.data == nil && p.p.inputs[k].bytes > 0 {
			return fmt.Errorf("graph: input %q has no data (use Program.Set or create it with data)", n.name)
		}
		if err := p.SetIndex(ctx, k, n.data); err != nil {
			return err
		}
	}
	return nil
}

// Run executes every step. It stops early with the context's error when ctx
// is cancelled.
func (p *Program) Run(ctx context.Context) error {
	done := ctx.Done()
	b := p.e.backend
	for i := range p.p.steps {
		select {
		case <-done:
			return fmt.Errorf("graph: run: %w", ctx.Err())
		default:
		}
		s := &p.p.steps[i]
		if err := b.Launch(ctx, s, p.bufs); err != nil {
			return fmt.Errorf("graph: run step %d (%s): %w", i, s.Name, err)
		}
	}
	return nil
}

// NumOutputs returns how many values the program produces.
func (p *Program) NumOutputs() int { return len(p.outputs) }

// Read copies output k's raw bytes into dst (len must match).
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
	return p.e.backend.Read(ctx, dst, p.bufs[p.p.outputSlot(k)], 0)
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

// Close returns the program's buffers to the engine for reuse.
func (p *Program) Close() {
	if p.bufs == nil {
		return
	}
	p.e.putBuf(p.bufs[0])
	for k := range p.p.inputs {
		p.e.putBuf(p.bufs[p.p.inputSlot(k)])
	}
	for k := range p.p.outputs {
		p.e.putBuf(p.bufs[p.p.outputSlot(k)])
	}
	p.bufs = nil
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
