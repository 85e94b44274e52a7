package graph

import (
	"fmt"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// slotKind says which table a location's slot index refers to; slots are
// numbered only once the plan knows how many of each there are.
type slotKind uint8

const (
	inArena slotKind = iota
	inConst
	inInput
	inOutput
	inState
)

// loc is where a value lives: a strided window of one buffer. For arena
// values, offset counts from the start of temp.
type loc struct {
	kind    slotKind
	idx     int // const/input/output/state number; temp number for the arena
	offset  int // elements
	strides []int
}

// operand is a kernel view whose slot is not numbered yet.
type operand struct {
	kind slotKind
	idx  int
	v    kernels.View
}

// pstep is a step under construction.
type pstep struct {
	op   kernels.Op
	in   []operand
	out  []operand
	attr any
	expr *kernels.Expr
	name string
}

// temp is one intermediate buffer in the arena.
type temp struct {
	bytes    int
	def, end int // first and last step index touching it
	offset   int // bytes, assigned by planning
}

// plan is a compiled schedule. It is immutable once built and shared by
// every Program compiled from a graph with the same structure, except for
// the cache's bookkeeping (guarded by the engine's mu).
type plan struct {
	steps      []kernels.Step
	arenaBytes int
	consts     []kernels.Buffer
	inputs     []planIO
	outputs    []planIO
	states     []int // per state slot: position (in the compiled order) of a node using it
	nslots     int
	runs       []run // the steps split by where they run
	hostRuns   int   // runs on the host backend
	hostSteps  int   // steps in them

	key    string // in the engine's cache
	bytes  int64  // estimated footprint (cache.go)
	used   uint64 // engine tick of the last compile or reuse
	users  int    // open programs (and compilations about to open one)
	cached bool   // in the engine's cache; released at users == 0 otherwise
}

// planIO describes a program input or output buffer.
type planIO struct {
	pos   int // position of the node in the compiled ancestor order
	dtype DType
	shape Shape
	bytes int
}

func (p *plan) constSlot(i int) int  { return 1 + i }
func (p *plan) inputSlot(i int) int  { return 1 + len(p.consts) + i }
func (p *plan) outputSlot(i int) int { return 1 + len(p.consts) + len(p.inputs) + i }
func (p *plan) stateSlot(i int) int {
	return 1 + len(p.consts) + len(p.inputs) + len(p.outputs) + i
}

// compiler holds the working state of one compilation.
type compiler struct {
	e     *Engine
	g     *Graph
	order []uint32       // ancestors of the outputs, ascending (topological)
	pos   map[uint32]int // node id → index in order
	orig  []uint32       // order before folding dropped nodes: plan I/O positions index it
	pos0  map[uint32]int // node id → index in orig
	outs  []uint32
	fold  bool

	isConst  []bool
	uses     []int // distinct consumers within order
	isOutput []bool
	interior []bool // fused into its single consumer's expression
	// biased maps a bias add (order index) to the product whose rows it
	// adds to (see biasAdds); that product is placed with the add.
	biased   map[int]int
	deferred map[int]bool // products placed with their bias add
	locs     []loc
	haveLoc  []bool

	temps    []temp
	steps    []pstep
	assigns  []pstep
	read     map[*State]bool // states the program reads (see placeAssign)
	p        *plan
	constIdx map[kernels.Buffer]int
	stateIdx map[*State]int
	outSlot  map[int]int // order index → output number still to be written
}

// collect returns the ancestors of outs in ascending id order.
func collect(g *Graph, outs []uint32) []uint32 {
	seen := make([]bool, len(g.nodes))
	stack := append([]uint32(nil), outs...)
	var order []uint32
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		order = append(order, id)
		stack = append(stack, g.nodes[id].in...)
	}
	slices.Sort(order)
	return order
}

// structureKey serialises the ancestor subgraph with inputs renumbered by
// position, plus the output positions: equal keys mean equal programs.
func structureKey(g *Graph, order []uint32, pos map[uint32]int, outs []uint32) string {
	var b []byte
	if g.f32 {
		b = append(b, "f32|"...)
	}
	in := make([]uint32, 0, 8)
	stateNo := make(map[*State]int)
	for _, id := range order {
		n := &g.nodes[id]
		in = in[:0]
		for _, x := range n.in {
			in = append(in, uint32(pos[x]))
		}
		b = appendNodeKey(b, n, in, stateNo)
	}
	b = append(b, "out:"...)
	for _, o := range outs {
		b = fmt.Appendf(b, "%d,", pos[o])
	}
	return string(b)
}

func newCompiler(e *Engine, g *Graph, outs []uint32, fold bool) *compiler {
	order := collect(g, outs)
	pos := make(map[uint32]int, len(order))
	for i, id := range order {
		pos[id] = i
	}
	return &compiler{e: e, g: g, order: order, pos: pos, orig: order, pos0: pos, outs: outs, fold: fold}
}

// alloc sizes the per-node decision tables for n nodes.
func (c *compiler) alloc(n int) {
	c.isConst = make([]bool, n)
	c.uses = make([]int, n)
	c.isOutput = make([]bool, n)
	c.interior = make([]bool, n)
	c.locs = make([]loc, n)
	c.haveLoc = make([]bool, n)
}

// build compiles the subgraph; with fold set, weight-only subgraphs are
// evaluated once on the engine and become constants. A build that fails
// gives up the holds its constants took.
func (c *compiler) build() (_ *plan, err error) {
	defer func() {
		if err != nil && c.p != nil {
			c.e.dropConsts(c.p.consts)
		}
	}()
	if err := c.checkStates(); err != nil {
		return nil, err
	}
	g := c.g
	N := len(c.order)
	c.alloc(N)
	c.p = &plan{}
	c.constIdx = make(map[kernels.Buffer]int)
	c.stateIdx = make(map[*State]int)
	c.outSlot = make(map[int]int)

	for i, id := range c.order {
		n := &g.nodes[id]
		switch n.op {
		case opParam, opConst:
			c.isConst[i] = true
		case opInput, opState, opAssign, opUpdate:
		default:
			all := len(n.in) > 0
			for _, x := range n.in {
				all = all && c.isConst[c.pos[x]]
			}
			c.isConst[i] = all
		}
		for k, x := range n.in {
			if !slices.Contains(n.in[:k], x) {
				c.uses[c.pos[x]]++
			}
		}
	}
	for _, o := range c.outs {
		c.isOutput[c.pos[o]] = true
	}

	if c.fold {
		if err := c.foldConstants(); err != nil {
			return nil, err
		}
	}

	// An elementwise node is fused into its consumer when that consumer is
	// its only one, is elementwise too, and has the same shape (so nothing
	// is recomputed per broadcast element). Reshapes between the two (a
	// Linear's output going back to its input's rank) are seen through:
	// the node's value would be dense, and reshaping a dense value keeps
	// its elements' order, so the consumer's step can compute it element
	// for element, its leaves read through the reshape (placeFused
	// computes the node on its own after all where a leaf's view cannot
	// be reshaped without a copy).
	for i, id := range c.order {
		n := &g.nodes[id]
		if !isElementwise(n) || c.haveLoc[i] || c.isOutput[i] || c.uses[i] != 1 {
			continue
		}
		shape := n.shape
		var through []int
		for j := c.consumer(i); j >= 0; j = c.consumer(j) {
			m := &g.nodes[c.order[j]]
			if m.op == opReshape && !c.haveLoc[j] && !c.isOutput[j] && c.uses[j] == 1 {
				through = append(through, j)
				shape = m.shape
				continue
			}
			if isElementwise(m) && !c.haveLoc[j] && m.shape.Equal(shape) {
				c.interior[i] = true
				for _, r := range through {
					c.interior[r] = true
				}
			}
			break
		}
	}
	c.biasAdds()

	// Outputs get slots of their own, inputs too, in order of appearance.
	for _, o := range c.outs {
		i := c.pos[o]
		n := &g.nodes[o]
		if n.op == opAssign {
			continue
		}
		c.p.outputs = append(c.p.outputs, planIO{pos: c.pos0[o], dtype: n.dtype, shape: n.shape, bytes: n.shape.Len() * n.dtype.Size()})
		if _, dup := c.outSlot[i]; !dup {
			c.outSlot[i] = len(c.p.outputs) - 1
		}
	}
	for i, id := range c.order {
		n := &g.nodes[id]
		if n.op == opInput {
			c.p.inputs = append(c.p.inputs, planIO{pos: c.pos0[id], dtype: n.dtype, shape: n.shape, bytes: n.shape.Len() * n.dtype.Size()})
			c.setLoc(i, loc{kind: inInput, idx: len(c.p.inputs) - 1, strides: contiguousStrides(n.shape)})
		}
	}

	c.read = make(map[*State]bool)
	for _, id := range c.order {
		if n := &g.nodes[id]; n.op == opState {
			c.read[n.state] = true
		}
	}
	// Schedule every node in topological order.
	for i, id := range c.order {
		n := &g.nodes[id]
		if c.haveLoc[i] || c.interior[i] || n.op == opTuple {
			continue
		}
		var err error
		switch n.op {
		case opParam, opConst:
			err = c.placeConst(i, n)
		case opState:
			c.setLoc(i, loc{kind: inState, idx: c.stateNum(n.state, id), strides: contiguousStrides(n.shape)})
		case opReshape, opPermute, opSlice, opExpand:
			c.placeView(i, n)
		case opElem, opCast:
			if mi, ok := c.biased[i]; ok && c.placeKernel(mi, &g.nodes[c.order[mi]], c.biasOf(i, mi), i) {
				break
			}
			err = c.placeFused(i, n)
		case opKernel:
			if !c.deferred[i] {
				c.placeKernel(i, n, -1, i)
			}
		case opConcat:
			c.placeConcat(i, n)
		case opAssign:
			c.placeAssign(i, n)
		case opUpdate:
			c.placeUpdate(i, n)
		default:
			err = fmt.Errorf("graph: cannot compile node #%d (%s)", id, opLabel(n))
		}
		if err != nil {
			return nil, err
		}
	}
	// Outputs not written by a step of their own (leaves, views, the same
	// node requested twice) are copied into their slots.
	written := make(map[int]bool)
	for _, s := range c.steps {
		for _, o := range s.out {
			if o.kind == inOutput {
				written[o.idx] = true
			}
		}
	}
	for k, o := range c.p.outputs {
		if written[k] {
			continue
		}
		dst := operand{kind: inOutput, idx: k, v: kernels.View{DType: o.dtype, Shape: o.shape, Strides: contiguousStrides(o.shape)}}
		i := c.pos[c.orig[o.pos]]
		c.steps = append(c.steps, copyStep(c.operand(i), dst, "output copy"))
		c.touch(i)
	}
	// State assignments run last; temps they read live until then.
	end := len(c.steps) + len(c.assigns)
	for _, s := range c.assigns {
		for _, o := range s.in {
			if o.kind == inArena {
				c.temps[o.idx].end = end
			}
		}
	}
	c.steps = append(c.steps, c.assigns...)
	if _, ok := c.e.planner.(kernels.FusingPlanner); ok {
		c.keepProductInputs()
	}
	c.planArena()
	c.finish()
	if err := c.e.partition(c.p); err != nil {
		return nil, err
	}
	return c.p, nil
}

func isElementwise(n *node) bool { return n.op == opElem || n.op == opCast }

// biasAdds finds the adds of a bias [N] to every row of a product [..., N]
// that would be a step of their own (not fused into an elementwise
// consumer) and are the product's only consumer: a Linear's bias, where
// nothing elementwise follows (an attention's projections, whose slices
// go to the attention kernel; a 2-D Linear's output). Every backend's
// product can add the bias itself (OpMatMul's In[2]: cuBLASLt's
// epilogue, the CPU's bfloat16 GEMM as it writes each tile), which saves
// a step that reads and rewrites the whole product. A bias add that
// fuses into a consumer is left there: it costs that step only the
// bias's reads, and on the CPU's float32 path less than the product's
// own pass over its output.
func (c *compiler) biasAdds() {
	c.biased, c.deferred = map[int]int{}, map[int]bool{}
	for i, id := range c.order {
		n := &c.g.nodes[id]
		if n.op != opElem || n.eop != kernels.EAdd || n.dtype != F32 || c.interior[i] || c.haveLoc[i] {
			continue
		}
		for k, x := range n.in {
			mi := c.pos[x]
			m := &c.g.nodes[x]
			if m.op != opKernel || m.kop != kernels.OpMatMul || len(m.in) != 2 || c.uses[mi] != 1 || c.isOutput[mi] || c.haveLoc[mi] || !m.shape.Equal(n.shape) {
				continue
			}
			b := &c.g.nodes[n.in[1-k]]
			if b.dtype == F32 && b.shape.Equal(Shape{n.shape[len(n.shape)-1]}) && !c.interior[c.pos[n.in[1-k]]] {
				c.biased[i], c.deferred[mi] = mi, true
				break
			}
		}
	}
}

// biasOf returns the order index of the bias that add ai adds to product
// mi.
func (c *compiler) biasOf(ai, mi int) int {
	n := &c.g.nodes[c.order[ai]]
	if n.in[0] == c.order[mi] {
		return c.pos[n.in[1]]
	}
	return c.pos[n.in[0]]
}

// consumer returns the order index of the first node after i that reads
// it (its only one where uses[i] is 1), or −1.
func (c *compiler) consumer(i int) int {
	id := c.order[i]
	for j := i + 1; j < len(c.order); j++ {
		if slices.Contains(c.g.nodes[c.order[j]].in, id) {
			return j
		}
	}
	return -1
}

func (c *compiler) setLoc(i int, l loc) {
	c.locs[i] = l
	c.haveLoc[i] = true
}

// stateNum returns the slot number of state s, first used by node id.
func (c *compiler) stateNum(s *State, id uint32) int {
	if k, ok := c.stateIdx[s]; ok {
		return k
	}
	c.p.states = append(c.p.states, c.pos0[id])
	c.stateIdx[s] = len(c.p.states) - 1
	return len(c.p.states) - 1
}

// operand returns the (unnumbered) view of the node at order index i.
func (c *compiler) operand(i int) operand {
	n := &c.g.nodes[c.order[i]]
	l := c.locs[i]
	return operand{kind: l.kind, idx: l.idx, v: kernels.View{Offset: l.offset, DType: n.dtype, Shape: n.shape, Strides: l.strides}}
}

// touch extends the lifetime of the arena temp behind node i to the step
// about to be added.
func (c *compiler) touch(i int) {
	if l := c.locs[i]; l.kind == inArena {
		c.temps[l.idx].end = max(c.temps[l.idx].end, len(c.steps))
	}
}

// newTemp reserves an arena temp for a value defined by the next step.
func (c *compiler) newTemp(dt DType, shape Shape) loc {
	c.temps = append(c.temps, temp{bytes: max(shape.Len()*dt.Size(), 1), def: len(c.steps), end: len(c.steps)})
	return loc{kind: inArena, idx: len(c.temps) - 1, strides: contiguousStrides(shape)}
}

// dest returns where node i's value is written: its output slot when it is
// a program output (the first time), else a new temp.
func (c *compiler) dest(i int) loc {
	n := &c.g.nodes[c.order[i]]
	if k, ok := c.outSlot[i]; ok {
		delete(c.outSlot, i)
		return loc{kind: inOutput, idx: k, strides: contiguousStrides(n.shape)}
	}
	return c.newTemp(n.dtype, n.shape)
}

func copyStep(src, dst operand, name string) pstep {
	wide := src.v.DType == I64 || src.v.DType == I32 || dst.v.DType == I64 || dst.v.DType == I32
	return pstep{
		op:   kernels.OpFused,
		in:   []operand{src},
		out:  []operand{dst},
		expr: &kernels.Expr{Code: []kernels.Instr{{Op: kernels.ELoad}}, NumRegs: 1, Wide: wide},
		name: name,
	}
}

// placeConst binds a weight or constant to an engine-owned buffer.
func (c *compiler) placeConst(i int, n *node) error {
	buf, err := c.e.constBuffer(n)
	if err != nil {
		return err
	}
	c.bindConst(i, n.shape, buf)
	return nil
}

// bindConst binds a weight or constant buffer; for a constant the caller
// has taken a hold (constUse), of which the plan keeps one.
func (c *compiler) bindConst(i int, shape Shape, buf kernels.Buffer) {
	k, ok := c.constIdx[buf]
	if !ok {
		c.p.consts = append(c.p.consts, buf)
		k = len(c.p.consts) - 1
		c.constIdx[buf] = k
	} else {
		c.e.dropConst(buf)
	}
	c.setLoc(i, loc{kind: inConst, idx: k, strides: contiguousStrides(shape)})
}

// placeView derives a view's location from its input's, copying the input
// first when the view cannot be expressed with strides.
func (c *compiler) placeView(i int, n *node) {
	j := c.pos[n.in[0]]
	src := c.locs[j]
	in := &c.g.nodes[c.order[j]]
	l := src
	switch n.op {
	case opReshape:
		if st, ok := reshapeStrides(in.shape, src.strides, n.shape); ok {
			l.strides = st
		} else {
			dst := c.newTemp(in.dtype, in.shape)
			c.touch(j)
			c.steps = append(c.steps, copyStep(c.operand(j), operand{kind: inArena, idx: dst.idx, v: kernels.View{DType: in.dtype, Shape: in.shape, Strides: dst.strides}}, "reshape copy"))
			l = dst
			l.strides = contiguousStrides(n.shape)
		}
	case opPermute:
		l.strides = make([]int, len(n.ints))
		for k, p := range n.ints {
			l.strides[k] = src.strides[p]
		}
	case opSlice:
		a, start, step := n.ints[0], n.ints[1], n.ints[2]
		l.strides = slices.Clone(src.strides)
		if n.shape[a] > 0 {
			l.offset += start * src.strides[a]
		}
		l.strides[a] *= step
	case opExpand:
		l.strides = broadcastStrides(in.shape, src.strides, n.shape)
	}
	c.setLoc(i, l)
}

// broadcastStrides reads a value of shape from with the given strides as if
// it had shape to (right-aligned; broadcast axes get stride 0).
func broadcastStrides(from Shape, strides []int, to Shape) []int {
	out := make([]int, len(to))
	off := len(to) - len(from)
	for k := range to {
		if k < off {
			continue
		}
		if from[k-off] == 1 && to[k] != 1 {
			continue
		}
		out[k] = strides[k-off]
	}
	return out
}

// reshapeStrides finds strides that let a strided value of shape from be
// read as shape to without copying (NumPy's rule), if there are any.
func reshapeStrides(from Shape, strides []int, to Shape) ([]int, bool) {
	if from.Len() == 0 {
		return contiguousStrides(to), true
	}
	var fs, fst []int
	for k, d := range from {
		if d != 1 {
			fs = append(fs, d)
			fst = append(fst, strides[k])
		}
	}
	out := make([]int, len(to))
	oi, fi := 0, 0
	for oi < len(to) || fi < len(fs) {
		if oi < len(to) && to[oi] == 1 {
			out[oi] = 1
			oi++
			continue
		}
		if oi >= len(to) || fi >= len(fs) {
			return nil, false
		}
		op, fp := to[oi], fs[fi]
		oj, fj := oi+1, fi+1
		for op != fp {
			if op < fp {
				if oj >= len(to) {
					return nil, false
				}
				op *= to[oj]
				oj++
			} else {
				if fj >= len(fs) {
					return nil, false
				}
				fp *= fs[fj]
				fj++
			}
		}
		for k := fi; k < fj-1; k++ {
			if fst[k] != fst[k+1]*fs[k+1] {
				return nil, false
			}
		}
		st := fst[fj-1]
		for k := oj - 1; k >= oi; k-- {
			if to[k] == 1 {
				out[k] = 1
				continue
			}
			out[k] = st
			st *= to[k]
		}
		oi, fi = oj, fj
	}
	return out, true
}

// placeFused compiles the cluster of elementwise nodes rooted at i into one
// OpFused step.
func (c *compiler) placeFused(i int, n *node) error {
	for {
		b := exprBuilder{c: c, root: i, regOf: map[regKey]uint16{}, shape: n.shape, cut: -1}
		res := b.emit(i, n.shape, -1)
		if r := b.cut; r >= 0 {
			// A leaf cannot be read through reshape r with strides (a
			// transposed or broadcast value whose axes it merges): compute
			// the reshape's input as a step of its own, read it through
			// the reshape as a dense value, and build the rest again.
			j := c.pos[c.g.nodes[c.order[r]].in[0]]
			c.interior[r], c.interior[j] = false, false
			if err := c.placeFused(j, &c.g.nodes[c.order[j]]); err != nil {
				return err
			}
			c.placeView(r, &c.g.nodes[c.order[r]])
			continue
		}
		b.wide = b.wide || n.dtype == I32 || n.dtype == I64
		expr := &kernels.Expr{Code: b.code, NumRegs: b.nregs, Result: res, Wide: b.wide}
		if err := expr.Validate(len(b.ins)); err != nil {
			return fmt.Errorf("graph: internal: %w", err)
		}
		for _, j := range b.leaves {
			c.touch(j)
		}
		c.setLoc(i, c.dest(i))
		c.steps = append(c.steps, pstep{op: kernels.OpFused, in: b.ins, out: []operand{c.operand(i)}, expr: expr, name: opLabel(n)})
		return nil
	}
}

// exprBuilder turns a fused cluster into register code.
type exprBuilder struct {
	c      *compiler
	root   int
	code   []kernels.Instr
	regOf  map[regKey]uint16
	ins    []operand
	leaves []int
	nregs  int
	shape  Shape
	wide   bool
	cut    int // a reshape a leaf cannot be read through (−1: none)
}

// regKey names the register of a cluster node, or of a leaf read at one
// shape (a leaf read both before and after a reshape is loaded through
// two views).
type regKey struct {
	i     int
	shape string
}

func (b *exprBuilder) reg() uint16 {
	b.nregs++
	return uint16(b.nregs - 1)
}

// emit returns the register of node i, read by a node of shape at; via is
// the reshape nearest to i on its way to the root (−1: none).
func (b *exprBuilder) emit(i int, at Shape, via int) uint16 {
	c := b.c
	n := &c.g.nodes[c.order[i]]
	inner := i == b.root || c.interior[i]
	key := regKey{i: i}
	if !inner {
		key.shape = fmt.Sprint(at)
	}
	if r, ok := b.regOf[key]; ok {
		return r
	}
	var r uint16
	switch {
	case inner && n.op == opReshape:
		r = b.emit(c.pos[n.in[0]], n.shape, i)
	case inner:
		src := make([]uint16, len(n.in))
		for k, x := range n.in {
			src[k] = b.emit(c.pos[x], n.shape, via)
			// Integer values need float64 registers unless they are only
			// cast to a float type: then the cast rounds them to that type
			// at load, as a separate Cast would, and the arithmetic after
			// it stays in float32 (MatMulInteger → Cast → Mul → Add, the
			// int8 models' dequantization, must not round twice).
			if d := c.g.nodes[x].dtype; (d == I32 || d == I64) && !(n.op == opCast && n.dtype.IsFloat()) {
				b.wide = true
			}
		}
		r = b.op(n, src)
	default:
		r = b.leaf(i, n, at, via)
	}
	b.regOf[key] = r
	return r
}

// leaf loads node i, read at shape at: broadcast to it, then, below a
// reshape, viewed in the root's shape.
func (b *exprBuilder) leaf(i int, n *node, at Shape, via int) uint16 {
	r := b.reg()
	// Scalar float constants become immediates.
	if n.op == opConst && n.shape.Len() == 1 && n.dtype == F32 {
		b.code = append(b.code, kernels.Instr{Op: kernels.EConst, Dst: r, Imm: float64(f32At(n.data, 0))})
		return r
	}
	o := b.c.operand(i)
	o.v.Strides = broadcastStrides(n.shape, o.v.Strides, at)
	if !at.Equal(b.shape) {
		st, ok := reshapeStrides(at, o.v.Strides, b.shape)
		if !ok {
			if b.cut < 0 {
				b.cut = via
			}
			return r
		}
		o.v.Strides = st
	}
	o.v.Shape = b.shape
	b.ins = append(b.ins, o)
	b.leaves = append(b.leaves, i)
	b.code = append(b.code, kernels.Instr{Op: kernels.ELoad, Dst: r, A: uint16(len(b.ins) - 1)})
	return r
}

func (b *exprBuilder) op(n *node, src []uint16) uint16 {
	emit := func(in kernels.Instr) uint16 {
		in.Dst = b.reg()
		b.code = append(b.code, in)
		return in.Dst
	}
	if n.op == opCast {
		from := b.c.g.nodes[n.in[0]].dtype
		x := src[0]
		switch {
		case n.dtype == Bool:
			z := emit(kernels.Instr{Op: kernels.EConst})
			return emit(kernels.Instr{Op: kernels.ENe, A: x, B: z})
		case n.dtype == F16 && from != F16:
			return emit(kernels.Instr{Op: kernels.ERoundF16, A: x})
		case n.dtype == BF16 && from != BF16:
			return emit(kernels.Instr{Op: kernels.ERoundBF16, A: x})
		case n.dtype.IsInt() && from.IsFloat():
			return emit(kernels.Instr{Op: kernels.ETrunc, A: x})
		}
		return x
	}
	in := kernels.Instr{Op: n.eop, Imm: n.imm}
	if len(src) > 0 {
		in.A = src[0]
	}
	if len(src) > 1 {
		in.B = src[1]
	}
	if len(src) > 2 {
		in.C = src[2]
	}
	r := emit(in)
	if n.dtype.IsInt() && (n.eop == kernels.EDiv || n.eop == kernels.EPow) {
		r = emit(kernels.Instr{Op: kernels.ETrunc, A: r})
	}
	return r
}

// dense returns node i as a dense operand, copying it into a temp first
// when it is strided.
func (c *compiler) dense(i int) operand {
	o := c.operand(i)
	c.touch(i)
	if o.v.Contiguous() {
		return o
	}
	n := &c.g.nodes[c.order[i]]
	dst := c.newTemp(n.dtype, n.shape)
	d := operand{kind: inArena, idx: dst.idx, v: kernels.View{DType: n.dtype, Shape: n.shape, Strides: dst.strides}}
	c.steps = append(c.steps, copyStep(o, d, "contiguous copy"))
	c.temps[dst.idx].end = len(c.steps)
	return d
}

// gemmOperand returns node i as an operand the GEMM can read (a unit stride
// in one of its two trailing axes), copying otherwise.
func (c *compiler) gemmOperand(i int) operand {
	o := c.operand(i)
	if _, _, err := kernels.GemmLayout(o.v); err == nil {
		c.touch(i)
		return o
	}
	return c.dense(i)
}

// placeKernel places kernel node i. With bias ≥ 0 (a product's, found by
// biasAdds) the product adds that node to its rows and its output is the
// value of node at (the add), if the backend runs such a product; it
// reports whether it did (else the product is placed alone and the add
// is left to its own step).
func (c *compiler) placeKernel(i int, n *node, bias, at int) bool {
	ins := make([]operand, len(n.in))
	for k, x := range n.in {
		j := c.pos[x]
		switch {
		case n.kop == kernels.OpMatMul && k < 2, n.kop == kernels.OpMatMulInteger && k == 1, n.kop == kernels.OpAttention && k < 3:
			ins[k] = c.gemmOperand(j)
		case n.kop == kernels.OpReduce:
			c.touch(j)
			ins[k] = c.operand(j)
		default:
			ins[k] = c.dense(j)
		}
	}
	// Copies made for later inputs move the kernel's step further on: every
	// arena input (a dense copy or a value read in place) must stay live
	// until the kernel itself runs, or its memory may be handed to the
	// kernel's outputs.
	for _, o := range ins {
		if o.kind == inArena && o.idx >= 0 {
			c.temps[o.idx].end = max(c.temps[o.idx].end, len(c.steps))
		}
	}
	if n.kop == kernels.OpMatMul || n.kop == kernels.OpAttention {
		// Give the matrix operands the output's batch axes (broadcast by
		// stride 0); so too attention's mask if it has batch axes of its
		// own (an [n, s] mask stays shared).
		mats := 2
		if n.kop == kernels.OpAttention {
			mats = 3
			if len(ins) > 3 && len(ins[3].v.Shape) > 2 {
				mats = 4
			}
		}
		batch := n.shape[:len(n.shape)-2]
		for k := 0; k < mats; k++ {
			v := &ins[k].v
			r := len(v.Shape)
			bshape := append(batch.Clone(), v.Shape[r-2:]...)
			v.Strides = broadcastStrides(v.Shape, v.Strides, bshape)
			v.Shape = bshape
		}
	}
	withBias := false
	if bias >= 0 {
		b := c.operand(bias)
		out := operand{kind: inArena, idx: -1, v: kernels.View{DType: n.dtype, Shape: n.shape, Strides: contiguousStrides(n.shape)}}
		if b.v.Contiguous() && c.supported(n.kop, append(slices.Clone(ins), b), []operand{out}, n.attr, nil) {
			c.touch(bias)
			ins = append(ins, b)
			withBias = true
		}
	}
	var outs []operand
	switch {
	case withBias:
		c.setLoc(at, c.dest(at))
		outs = []operand{c.operand(at)}
	case n.nout <= 1:
		c.setLoc(i, c.dest(i))
		outs = []operand{c.operand(i)}
	default:
		shapes, dts := n.outSpecs()
		tuples := make([]int, len(shapes))
		for k := range tuples {
			tuples[k] = -1
		}
		for j := i + 1; j < len(c.order); j++ {
			m := &c.g.nodes[c.order[j]]
			if m.op == opTuple && m.in[0] == c.order[i] {
				tuples[m.ints[0]] = j
			}
		}
		for k := range shapes {
			if j := tuples[k]; j >= 0 {
				c.setLoc(j, c.dest(j))
				outs = append(outs, c.operand(j))
				continue
			}
			l := c.newTemp(dts[k], shapes[k])
			outs = append(outs, operand{kind: inArena, idx: l.idx, v: kernels.View{DType: dts[k], Shape: shapes[k], Strides: l.strides}})
		}
		c.setLoc(i, loc{kind: inArena, idx: -1})
	}
	if c.lower(n.kop, ins, outs, n.attr) {
		return withBias
	}
	name := n.kop.String()
	if withBias {
		name += "+bias"
	}
	c.steps = append(c.steps, pstep{op: n.kop, in: ins, out: outs, attr: n.attr, name: name})
	return withBias
}

// placeConcat copies each input into its window of the output.
func (c *compiler) placeConcat(i int, n *node) {
	c.setLoc(i, c.dest(i))
	full := c.operand(i)
	a := n.ints[0]
	off := 0
	for _, x := range n.in {
		j := c.pos[x]
		m := &c.g.nodes[x]
		w := full
		w.v.Shape = m.shape
		w.v.Offset = full.v.Offset + off*full.v.Strides[a]
		c.touch(j)
		if full.kind == inArena {
			c.temps[full.idx].end = len(c.steps)
		}
		c.steps = append(c.steps, copyStep(c.operand(j), w, "concat"))
		off += m.shape[a]
	}
}

// placeUpdate writes a value into its state in place; the node's value is
// the state itself.
func (c *compiler) placeUpdate(i int, n *node) {
	k := c.stateNum(n.state, c.order[i])
	src, start := c.dense(c.pos[n.in[0]]), c.dense(c.pos[n.in[1]])
	for _, o := range []operand{src, start} {
		if o.kind == inArena {
			c.temps[o.idx].end = max(c.temps[o.idx].end, len(c.steps))
		}
	}
	st := contiguousStrides(n.state.shape)
	dst := operand{kind: inState, idx: k, v: kernels.View{DType: n.dtype, Shape: n.state.shape, Strides: st}}
	c.steps = append(c.steps, pstep{op: kernels.OpSliceUpdate, in: []operand{src, start}, out: []operand{dst}, attr: kernels.AxisAttr{Axis: n.ints[0]}, name: "update " + n.state.name})
	c.setLoc(i, loc{kind: inState, idx: k, strides: st})
}

// checkStates rejects programs whose effect on a state depends on an order
// the graph does not give: a state updated in place and also read, assigned
// or updated again elsewhere.
func (c *compiler) checkStates() error {
	uses := map[*State][]opKind{}
	for _, id := range c.order {
		n := &c.g.nodes[id]
		switch n.op {
		case opState, opAssign, opUpdate:
			uses[n.state] = append(uses[n.state], n.op)
		}
	}
	for s, ops := range uses {
		if len(ops) > 1 && slices.Contains(ops, opUpdate) {
			return fmt.Errorf("graph: state %s is updated in place and also read or written in the same program", s.name)
		}
	}
	return nil
}

// placeAssign copies a value into its window of a state after all other
// steps have run, so that every read of the state sees it as it was; into
// a state the program does not read, as soon as the value is ready, so
// that the value's temp is free for the steps after (an encoder pass that
// stores every layer's cross-attention keys and values held them all to
// its end: 37 of Whisper base's 40 MB arena for a 30-s window).
func (c *compiler) placeAssign(i int, n *node) {
	s := n.state
	k := c.stateNum(s, c.order[i])
	j := c.pos[n.in[0]]
	src := c.operand(j)
	a, start := n.ints[0], n.ints[1]
	st := contiguousStrides(s.shape)
	dst := operand{kind: inState, idx: k, v: kernels.View{DType: s.dtype, Shape: src.v.Shape, Strides: st}}
	if len(st) > 0 {
		dst.v.Offset = start * st[a]
	}
	// A value that reads the state itself goes through a temp, so the copy
	// never overlaps its own source.
	if src.kind == inState && src.idx == k {
		t := c.newTemp(src.v.DType, src.v.Shape)
		tv := operand{kind: inArena, idx: t.idx, v: kernels.View{DType: src.v.DType, Shape: src.v.Shape, Strides: t.strides}}
		c.steps = append(c.steps, copyStep(src, tv, "assign staging"))
		src = tv
	} else {
		c.touch(j)
	}
	if c.read[s] {
		c.assigns = append(c.assigns, copyStep(src, dst, "assign "+s.name))
	} else {
		c.steps = append(c.steps, copyStep(src, dst, "assign "+s.name))
	}
	c.setLoc(i, loc{kind: inArena, idx: -1})
}

// keepProductInputs keeps the operands of an int8 product alive through
// the elementwise step right after it that reads its result, so that the
// step's output never shares their memory. A backend that merges such a
// step into the product (kernels.FusingPlanner: a decoder's residual add
// after its output projection) stores the step's results while other
// blocks of the product still read the operands, and refuses the merge
// where the two would overlap; the arena had given the add's output the
// attention result the projection reads, the last use of that buffer.
// The arena keeps the operands (a few rows) one step longer.
func (c *compiler) keepProductInputs() {
	for k := 0; k+1 < len(c.steps); k++ {
		s, next := &c.steps[k], &c.steps[k+1]
		if s.op != kernels.OpLinearQ || next.op != kernels.OpFused || len(s.out) != 1 || s.out[0].kind != inArena {
			continue
		}
		if !slices.ContainsFunc(next.in, func(o operand) bool { return o.kind == inArena && o.idx == s.out[0].idx }) {
			continue
		}
		for _, o := range s.in {
			if o.kind == inArena {
				c.temps[o.idx].end = max(c.temps[o.idx].end, k+1)
			}
		}
	}
}

// planArena gives each temp a byte offset so that temps alive at the same
// time never overlap (first fit over the temps sorted by size).
func (c *compiler) planArena() {
	const align = 64
	idx := make([]int, len(c.temps))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int { return c.temps[b].bytes - c.temps[a].bytes })
	type block struct{ off, end, def, last int }
	var placed []block
	top := 0
	for _, k := range idx {
		t := &c.temps[k]
		size := (t.bytes + align - 1) / align * align
		var busy []block
		for _, b := range placed {
			if b.def <= t.end && t.def <= b.last {
				busy = append(busy, b)
			}
		}
		slices.SortFunc(busy, func(a, b block) int { return a.off - b.off })
		off := 0
		for _, b := range busy {
			if off+size <= b.off {
				break
			}
			off = max(off, b.end)
		}
		t.offset = off
		placed = append(placed, block{off: off, end: off + size, def: t.def, last: t.end})
		top = max(top, off+size)
	}
	c.p.arenaBytes = top
}

// finish numbers the slots and produces the final steps.
func (c *compiler) finish() {
	p := c.p
	p.nslots = 1 + len(p.consts) + len(p.inputs) + len(p.outputs) + len(p.states)
	resolve := func(o operand) kernels.View {
		v := o.v
		switch o.kind {
		case inArena:
			v.Slot = 0
			v.Offset += c.temps[o.idx].offset / max(v.DType.Size(), 1)
		case inConst:
			v.Slot = p.constSlot(o.idx)
		case inInput:
			v.Slot = p.inputSlot(o.idx)
		case inOutput:
			v.Slot = p.outputSlot(o.idx)
		case inState:
			v.Slot = p.stateSlot(o.idx)
		}
		return v
	}
	p.steps = make([]kernels.Step, len(c.steps))
	for k, s := range c.steps {
		st := kernels.Step{Op: s.op, Attr: s.attr, Expr: s.expr, Name: s.name, F32: c.g.f32}
		st.In = make([]kernels.View, len(s.in))
		for j, o := range s.in {
			st.In[j] = resolve(o)
		}
		st.Out = make([]kernels.View, len(s.out))
		for j, o := range s.out {
			st.Out[j] = resolve(o)
		}
		if s.op == kernels.OpFused {
			coalesced := kernels.Coalesce(append(append([]kernels.View{}, st.Out...), st.In...))
			st.Out, st.In = coalesced[:1], coalesced[1:]
		}
		p.steps[k] = st
	}
}
