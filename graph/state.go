package graph

import (
	"context"
	"fmt"

	"github.com/tensorforge/forge/kernels"
)

// State is a buffer that persists across program runs on one engine: a VAD's
// LSTM state, a decoder's KV cache. Programs read it with Graph.ReadState and
// update it in place with Graph.Assign; nothing is hidden in globals. A
// State is owned by one stream (one goroutine) at a time.
type State struct {
	name  string
	dtype DType
	shape Shape
	eng   *Engine
	buf   kernels.Buffer
}

// NewState allocates a zero-filled state buffer on the engine's backend.
func (e *Engine) NewState(name string, dtype DType, shape Shape) (*State, error) {
	if !dtype.Valid() {
		return nil, fmt.Errorf("graph: state %s: invalid dtype %s", name, dtype)
	}
	if err := checkShape(shape); err != nil {
		return nil, fmt.Errorf("graph: state %s: %w", name, err)
	}
	buf, err := e.backend.Alloc(max(shape.Len()*dtype.Size(), 1))
	if err != nil {
		return nil, fmt.Errorf("graph: state %s: %w", name, err)
	}
	return &State{name: name, dtype: dtype, shape: shape.Clone(), eng: e, buf: buf}, nil
}

// Name returns the state's name.
func (s *State) Name() string { return s.name }

// Shape returns the state's shape.
func (s *State) Shape() Shape { return s.shape }

// DType returns the state's element type.
func (s *State) DType() DType { return s.dtype }

// Reset zeroes the state (a new stream starts).
func (s *State) Reset(ctx context.Context) error {
	zero := make([]byte, s.shape.Len()*s.dtype.Size())
	return s.Write(ctx, zero)
}

// Write replaces the state's contents with raw little-endian bytes.
func (s *State) Write(ctx context.Context, data []byte) error {
	if want := s.shape.Len() * s.dtype.Size(); len(data) != want {
		return fmt.Errorf("graph: state %s: write of %d bytes, want %d", s.name, len(data), want)
	}
	if s.buf == nil {
		return fmt.Errorf("graph: state %s is closed", s.name)
	}
	return s.eng.withQueue(ctx, func(q kernels.Queue) error { return q.Write(ctx, s.buf, 0, data) })
}

// Read copies the state's contents out (after pending work finishes).
func (s *State) Read(ctx context.Context, dst []byte) error {
	if want := s.shape.Len() * s.dtype.Size(); len(dst) != want {
		return fmt.Errorf("graph: state %s: read into %d bytes, want %d", s.name, len(dst), want)
	}
	if s.buf == nil {
		return fmt.Errorf("graph: state %s is closed", s.name)
	}
	return s.eng.withQueue(ctx, func(q kernels.Queue) error { return q.Read(ctx, dst, s.buf, 0) })
}

// Close releases the state's buffer.
func (s *State) Close() {
	if s.buf != nil {
		s.eng.backend.Free(s.buf)
		s.buf = nil
	}
}

// ReadState returns the state's current value as a tensor.
func (g *Graph) ReadState(s *State) Tensor {
	if s == nil || s.buf == nil {
		return g.failf("read_state", "state is nil or closed")
	}
	return g.add(node{op: opState, dtype: s.dtype, shape: s.shape, state: s, name: s.name})
}

// Assign writes value into the window of state s that starts at start along
// axis (the whole state when value has the state's shape). It returns an
// effect token: pass it to Compile/Eval among the outputs. Assignments run
// after every other step of the program, in the order they were made, so
// reads of s in the same program see the old value.
func (g *Graph) Assign(s *State, value Tensor, axis, start int) Tensor {
	if s == nil || s.buf == nil {
		return g.failf("assign", "state is nil or closed")
	}
	if bad, ok := g.check("assign", value); !ok {
		return bad
	}
	v := value.node()
	if v.dtype != s.dtype {
		return g.failf("assign", "value %s%v does not match state %s %s%v", v.dtype, v.shape, s.name, s.dtype, s.shape)
	}
	if len(v.shape) != len(s.shape) {
		return g.failf("assign", "value %v and state %s %v differ in rank", v.shape, s.name, s.shape)
	}
	a, err := normAxis(axis, max(len(s.shape), 1))
	if err != nil && len(s.shape) > 0 {
		return g.failf("assign", "%v", err)
	}
	for i := range s.shape {
		lo, hi := 0, s.shape[i]
		if i == a {
			lo = start
		}
		if i == a && (start < 0 || start+v.shape[i] > hi) || i != a && v.shape[i] != hi || lo < 0 {
			return g.failf("assign", "value %v does not fit state %s %v at offset %d of axis %d", v.shape, s.name, s.shape, start, axis)
		}
	}
	return g.add(node{op: opAssign, in: []uint32{value.id}, ints: []int{a, start}, state: s, shape: Shape{}, dtype: s.dtype})
}

// UpdateState writes value into state s at the position start holds (an
// I32/I64 scalar computed at run time, such as a decoder's position) along
// axis, in place, and returns the state's whole value after the write. It
// is how a program reads a cache it has just appended to without copying
// it: build the step once with the position as an input. start may also
// hold one position per row of the axes before axis (row-major), so that
// a batch of sequences appends each at its own length.
//
// The write happens when something computed from the returned tensor is
// compiled. A graph may update a state once and must not also read it with
// ReadState or write it with Assign (the order would be undefined); Compile
// reports such a graph. A start where value does not fit fails the run.
func (g *Graph) UpdateState(s *State, value Tensor, axis int, start Tensor) Tensor {
	if s == nil || s.buf == nil {
		return g.failf("update_state", "state is nil or closed")
	}
	if bad, ok := g.check("update_state", value, start); !ok {
		return bad
	}
	v := value.node()
	if v.dtype != s.dtype || len(v.shape) != len(s.shape) {
		return g.failf("update_state", "value %s%v does not match state %s %s%v", v.dtype, v.shape, s.name, s.dtype, s.shape)
	}
	a, err := normAxis(axis, len(s.shape))
	if err != nil {
		return g.failf("update_state", "%v (state %s %v)", err, s.name, s.shape)
	}
	for i := range s.shape {
		if i != a && v.shape[i] != s.shape[i] || i == a && v.shape[i] > s.shape[i] {
			return g.failf("update_state", "value %v does not fit state %s %v along axis %d", v.shape, s.name, s.shape, a)
		}
	}
	rows := s.shape[:a].Len()
	if d, l := start.DType(), start.Shape().Len(); (d != I32 && d != I64) || (l != 1 && l != rows) {
		return g.failf("update_state", "start must be one i32 or i64 value or one per row of the axes before %d (%d), got %s%v", a, rows, d, start.Shape())
	}
	return g.add(node{op: opUpdate, in: []uint32{value.id, start.id}, ints: []int{a}, state: s, shape: s.shape, dtype: s.dtype})
}
