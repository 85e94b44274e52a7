package graph

import (
	"context"
	"fmt"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// computes reports whether a node does arithmetic (as opposed to being a
// leaf or a view of another node).
func computes(n *node) bool {
	switch n.op {
	case opParam, opConst, opInput, opState, opReshape, opPermute, opSlice, opExpand:
		return false
	}
	return true
}

// foldConstants evaluates, once per engine, every weight-only subgraph whose
// value the rest of the program reads, and binds the result as a constant.
// Views of weights stay views. Nodes needed only by folded ones drop out.
func (c *compiler) foldConstants() error {
	g := c.g
	N := len(c.order)
	frontier := make([]bool, N)
	for i := N - 1; i >= 0; i-- {
		if !c.isConst[i] {
			continue
		}
		frontier[i] = c.isOutput[i]
	}
	for j := N - 1; j >= 0; j-- {
		n := &g.nodes[c.order[j]]
		for _, x := range n.in {
			i := c.pos[x]
			if !c.isConst[i] {
				continue
			}
			if !c.isConst[j] || (frontier[j] && !computes(n) && n.op != opTuple) {
				frontier[i] = true
			}
		}
	}
	var roots []int
	for i := 0; i < N; i++ {
		n := &g.nodes[c.order[i]]
		if !c.isConst[i] || !frontier[i] || !computes(n) {
			continue
		}
		if n.op == opKernel && n.nout > 1 {
			continue // its tuple nodes are the values
		}
		roots = append(roots, i)
	}
	if len(roots) == 0 {
		return nil
	}
	keys := make([]string, len(roots))
	bufs := make([]kernels.Buffer, len(roots))
	var missing []uint32
	var missingIdx []int
	c.e.mu.Lock()
	for k, i := range roots {
		id := c.order[i]
		sub := collect(g, []uint32{id})
		pos := make(map[uint32]int, len(sub))
		for p, x := range sub {
			pos[x] = p
		}
		keys[k] = structureKey(g, sub, pos, []uint32{id})
		if b, ok := c.e.folded[keys[k]]; ok {
			c.e.constUses[b].n++ // held now: no release frees it before it is bound
			bufs[k] = b
		} else {
			missing = append(missing, id)
			missingIdx = append(missingIdx, k)
		}
	}
	c.e.mu.Unlock()
	if len(missing) > 0 {
		sc := newCompiler(c.e, g, missing, false)
		p, err := sc.build()
		if err != nil {
			c.e.dropConsts(bufs)
			return fmt.Errorf("graph: folding constants: %w", err)
		}
		p.users = 1 // runs once, uncached: released when prog closes
		prog, err := c.e.newProgram(p, g, sc.orig, true, true)
		if err != nil {
			c.e.dropConsts(bufs)
			return fmt.Errorf("graph: folding constants: %w", err)
		}
		if err := prog.Run(context.Background()); err != nil {
			prog.Close()
			c.e.dropConsts(bufs)
			return fmt.Errorf("graph: folding constants: %w", err)
		}
		// A folded value is a constant like any weight: it is read back and
		// wrapped, so the backend knows it never changes (the CPU backend
		// then packs it for its GEMMs once, as it does weights).
		vals := make([][]byte, len(missingIdx))
		for k := range missingIdx {
			v, err := prog.Output(context.Background(), k)
			if err != nil {
				prog.Close()
				c.e.dropConsts(bufs)
				return fmt.Errorf("graph: folding constants: %w", err)
			}
			vals[k] = v.Data
		}
		prog.Close()
		c.e.mu.Lock()
		for k, idx := range missingIdx {
			if b, ok := c.e.folded[keys[idx]]; ok { // folded meanwhile by another compilation
				c.e.constUses[b].n++
				bufs[idx] = b
				continue
			}
			data := vals[k]
			if len(data) == 0 {
				data = make([]byte, 1) // backends need a non-empty buffer
			}
			buf, err := c.e.wrapConst(data)
			if err != nil {
				c.e.mu.Unlock()
				c.e.dropConsts(bufs)
				return fmt.Errorf("graph: folding constants: %w", err)
			}
			c.e.folded[keys[idx]] = buf
			c.e.constUses[buf] = &constUse{n: 1, key: keys[idx], folded: true}
			bufs[idx] = buf
		}
		c.e.mu.Unlock()
	}
	for k, i := range roots {
		c.bindConst(i, g.nodes[c.order[i]].shape, bufs[k])
	}

	// Drop nodes only the folded ones needed, and recount uses.
	needed := make([]bool, N)
	for _, o := range c.outs {
		needed[c.pos[o]] = true
	}
	for j := N - 1; j >= 0; j-- {
		if !needed[j] || (c.haveLoc[j] && c.isConst[j] && computes(&g.nodes[c.order[j]])) {
			continue
		}
		for _, x := range g.nodes[c.order[j]].in {
			needed[c.pos[x]] = true
		}
	}
	var order []uint32
	for i, id := range c.order {
		if needed[i] {
			order = append(order, id)
		}
	}
	if len(order) != N {
		c.reindex(order)
	}
	return nil
}

// reindex restricts the compiler to a subset of its nodes, keeping what was
// decided about them.
func (c *compiler) reindex(order []uint32) {
	old := c.pos
	isConst, isOutput, locs, haveLoc := c.isConst, c.isOutput, c.locs, c.haveLoc
	N := len(order)
	c.order = order
	c.pos = make(map[uint32]int, N)
	c.alloc(N)
	for i, id := range order {
		c.pos[id] = i
		o := old[id]
		c.isConst[i], c.isOutput[i], c.locs[i], c.haveLoc[i] = isConst[o], isOutput[o], locs[o], haveLoc[o]
	}
	for i, id := range order {
		n := &c.g.nodes[id]
		if c.haveLoc[i] && c.isConst[i] && computes(n) {
			continue // folded: its inputs are not read at run time
		}
		for k, x := range n.in {
			if p, ok := c.pos[x]; ok && !slices.Contains(n.in[:k], x) {
				c.uses[p]++
			}
		}
	}
}
