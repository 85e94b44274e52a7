package graph

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
)

// opKind is the graph-level operation of a node. It is a superset of the
// kernel ops: leaves, views, and elementwise ops exist only here and are
// compiled into kernel steps (or into nothing, for views).
type opKind uint8

const (
	opInvalid opKind = iota
	// leaves
	opParam // weights by reference (data not copied)
	opConst // small constant created by graph code (owned bytes)
	opInput // placeholder fed at run time
	opState // read of a persistent state buffer
	// elementwise (fusable)
	opElem // one kernels.EOp over 1..3 broadcast inputs
	opCast // dtype conversion
	// views
	opReshape
	opPermute
	opSlice
	opExpand
	// kernels
	opKernel // a kernels.Op with attrs
	opTuple  // picks output ints[0] of a multi-output kernel node
	opConcat
	opAssign // effect: writes input 1 into a window of state input 0
	opUpdate // writes input 0 into state at the position input 1 holds; its value is the whole state after
)

var opKindNames = [...]string{"invalid", "param", "const", "input", "state",
	"elem", "cast", "reshape", "permute", "slice", "expand", "kernel", "tuple",
	"concat", "assign", "update"}

// node is one immutable entry of the arena.
type node struct {
	op    opKind
	kop   kernels.Op  // opKernel
	eop   kernels.EOp // opElem
	imm   float64     // opElem immediate
	ints  []int       // axes, permutation, slice starts/steps, ...
	attr  any         // kernel attribute struct (opKernel)
	in    []uint32
	shape Shape
	dtype DType
	data  []byte   // opParam / opConst, or an opInput's bound data
	parts [][]byte // an opInput's bound data in pieces (InputF32Parts)
	held  *Held    // an opInput bound to a value in backend memory (InputHeld)
	name  string   // params, inputs, states: for errors and debugging
	state *State   // opState, opAssign, opUpdate
	nout  int      // opKernel: number of outputs (tuple nodes pick them)
	err   error
}

// Graph is an append-only arena of tensor nodes. A Graph is not safe for
// concurrent use; build one per goroutine (they are cheap) and share weights
// through Param, which never copies.
type Graph struct {
	nodes  []node
	byKey  map[string]uint32
	keyBuf []byte
	inputs []uint32
	err    error // first error, for Err
	f32    bool  // FullPrecision
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{byKey: make(map[string]uint32)}
}

// FullPrecision has every step of the programs compiled from g compute in
// float32, whatever precision the backend's products run in
// (kernels.Step.F32). It is for a stage whose results later stages are
// sensitive to and which costs little: Kokoro's durations and F0, which
// the harmonic source integrates over seconds (with f16 products its F0
// moved by 1.5e-3, and the waveform's phase with it).
func (g *Graph) FullPrecision() { g.f32 = true }

// Tensor is a handle to a node: cheap to copy, meaningful only with its graph.
type Tensor struct {
	g  *Graph
	id uint32
}

// Graph returns the graph the tensor belongs to.
func (t Tensor) Graph() *Graph { return t.g }

// ID returns the node's index in its graph's arena.
func (t Tensor) ID() uint32 { return t.id }

func (t Tensor) node() *node { return &t.g.nodes[t.id] }

// Shape returns the inferred shape (nil if the tensor carries an error).
func (t Tensor) Shape() Shape {
	if t.g == nil {
		return nil
	}
	return t.node().shape
}

// DType returns the inferred element type.
func (t Tensor) DType() DType {
	if t.g == nil {
		return kernels.InvalidDType
	}
	return t.node().dtype
}

// Rank returns the number of axes.
func (t Tensor) Rank() int { return len(t.Shape()) }

// Dim returns the extent of axis i (negative i counts from the end).
func (t Tensor) Dim(i int) int {
	s := t.Shape()
	if i < 0 {
		i += len(s)
	}
	if i < 0 || i >= len(s) {
		return 0
	}
	return s[i]
}

// Err returns the error this tensor carries: the first invalid op among its
// ancestors, or nil.
func (t Tensor) Err() error {
	if t.g == nil {
		return fmt.Errorf("graph: zero Tensor (not created by a Graph)")
	}
	return t.node().err
}

// Err returns the first error recorded anywhere in the graph.
func (g *Graph) Err() error { return g.err }

// Len returns the number of nodes in the arena.
func (g *Graph) Len() int { return len(g.nodes) }

// String describes the tensor for error messages.
func (t Tensor) String() string {
	if t.g == nil {
		return "Tensor(nil)"
	}
	n := t.node()
	if n.err != nil {
		return fmt.Sprintf("Tensor(#%d, error)", t.id)
	}
	return fmt.Sprintf("Tensor(#%d %s %s%v)", t.id, opLabel(n), n.dtype, n.shape)
}

func opLabel(n *node) string {
	switch n.op {
	case opKernel:
		return n.kop.String()
	case opElem:
		return n.eop.String()
	}
	return opKindNames[n.op]
}

// fail returns a tensor carrying err, recorded as the graph's first error.
func (g *Graph) fail(err error) Tensor {
	if g.err == nil {
		g.err = err
	}
	g.nodes = append(g.nodes, node{op: opInvalid, err: err})
	return Tensor{g, uint32(len(g.nodes) - 1)}
}

// failf formats an error naming the op.
func (g *Graph) failf(op string, format string, args ...any) Tensor {
	return g.fail(fmt.Errorf("graph: %s: %s", op, fmt.Sprintf(format, args...)))
}

// check returns a non-nil tensor (carrying an error) when any input is from
// another graph, is the zero Tensor, or already carries an error.
func (g *Graph) check(op string, ins ...Tensor) (Tensor, bool) {
	for i, t := range ins {
		if t.g == nil {
			return g.failf(op, "input %d is the zero Tensor", i), false
		}
		if t.g != g {
			return g.failf(op, "input %d belongs to another graph", i), false
		}
		if err := t.node().err; err != nil {
			g.nodes = append(g.nodes, node{err: err})
			return Tensor{g, uint32(len(g.nodes) - 1)}, false
		}
	}
	return Tensor{}, true
}

// add appends n, or returns the existing identical node (hash consing).
// Leaves that must stay distinct (inputs, states, effects) skip sharing.
func (g *Graph) add(n node) Tensor {
	if n.op == opInput || n.op == opAssign {
		g.nodes = append(g.nodes, n)
		id := uint32(len(g.nodes) - 1)
		if n.op == opInput {
			g.inputs = append(g.inputs, id)
		}
		return Tensor{g, id}
	}
	g.keyBuf = appendNodeKey(g.keyBuf[:0], &n, n.in, nil)
	if id, ok := g.byKey[string(g.keyBuf)]; ok {
		return Tensor{g, id}
	}
	g.nodes = append(g.nodes, n)
	id := uint32(len(g.nodes) - 1)
	g.byKey[string(g.keyBuf)] = id
	return Tensor{g, id}
}

// appendNodeKey serialises everything that defines a node's value, with its
// inputs given as ids (graph-local when hash consing, position-local when
// keying compiled programs).
//
// stateNo, when non-nil, numbers states by first appearance so that
// programs key on which state slot a node uses rather than which State
// object: every stream's detector then shares one compiled program.
func appendNodeKey(b []byte, n *node, in []uint32, stateNo map[*State]int) []byte {
	// Binary, with every list length-prefixed, so no two nodes share a key
	// and no number is formatted in decimal: models build their graphs per
	// call, and these keys are most of what that costs (Whisper tiny's
	// encoder on the GPU host spent 0.38 ms a window in them and in
	// building nodes, a third of the encoder's time on the device).
	b = append(b, byte(n.op), byte(n.kop), byte(n.eop), byte(n.dtype))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(n.imm))
	b = binary.AppendUvarint(b, uint64(len(n.ints)))
	for _, v := range n.ints {
		b = binary.AppendVarint(b, int64(v))
	}
	b = binary.AppendUvarint(b, uint64(len(n.shape)))
	for _, v := range n.shape {
		b = binary.AppendVarint(b, int64(v))
	}
	b = binary.AppendUvarint(b, uint64(len(in)))
	for _, v := range in {
		b = binary.AppendUvarint(b, uint64(v))
	}
	if n.attr != nil {
		b = fmt.Appendf(b, "|%+v", n.attr)
	}
	switch n.op {
	case opParam:
		b = append(b, "|p"...)
		b = binary.AppendUvarint(b, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(n.data)))))
		b = binary.AppendUvarint(b, uint64(len(n.data)))
	case opConst:
		b = append(b, "|c"...)
		b = binary.AppendUvarint(b, uint64(len(n.data)))
		b = append(b, n.data...)
	case opState, opAssign, opUpdate:
		b = append(b, "|s"...)
		if stateNo != nil {
			k, ok := stateNo[n.state]
			if !ok {
				k = len(stateNo)
				stateNo[n.state] = k
			}
			b = binary.AppendUvarint(b, uint64(k))
		} else {
			b = binary.AppendUvarint(b, uint64(uintptr(unsafe.Pointer(n.state))))
		}
	}
	b = append(b, ';')
	return b
}
