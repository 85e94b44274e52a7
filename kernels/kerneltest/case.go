package kerneltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tensorforge/forge/kernels"
)

// kcase is one step with its operands, its reference and its tolerances.
type kcase struct {
	group string // report row
	name  string // what distinguishes it within the group
	step  kernels.Step
	in    []*operand
	out   []*operand
	ref   func(in []ND) []ND // float64 reference: each output's logical values
	tol   []tolerance        // per output
	// scale, where set, gives each output element the magnitude its
	// rounding errors are relative to (see compare).
	scale func() [][]float64
	slots []slot // the buffer table, with initial contents
	// coalesce merges the views' dimensions as the graph does for fused
	// steps (kernels.Coalesce) once the inputs are written.
	coalesce bool
}

// slot is one buffer of a case's table.
type slot struct {
	init []byte
	wrap bool // constant: Backend.Wrap, never written or read back
}

// fill is the byte every buffer starts with outside the inputs: NaN in
// every float type, so an element read from the wrong place or never
// written shows.
const fill = 0xFF

// build lays out the case's buffers: each operand in a buffer of its own,
// or (for about a third of the cases) every operand that is not wrapped
// in one shared arena, as the graph's temps are, and writes the inputs'
// values. It sets the step's views.
func (c *kcase) build(rng *rand.Rand) {
	arena := rng.IntN(3) == 0
	all := append(append([]*operand(nil), c.in...), c.out...)
	arenaSlot := -1
	var arenaBytes int
	for _, o := range all {
		sz := max(o.dtype.Size(), 1)
		if o.wrap || !arena {
			n := (o.view.Offset + o.span + rng.IntN(3)) * sz
			o.view.Slot = len(c.slots)
			c.slots = append(c.slots, slot{init: filled(max(n, 1)), wrap: o.wrap})
			continue
		}
		if arenaSlot < 0 {
			arenaSlot = len(c.slots)
			c.slots = append(c.slots, slot{})
		}
		arenaBytes = (arenaBytes + 63) / 64 * 64
		o.view.Slot = arenaSlot
		o.view.Offset += arenaBytes / sz
		arenaBytes += (o.view.Offset-arenaBytes/sz+o.span)*sz + rng.IntN(3)*sz
	}
	if arenaSlot >= 0 {
		c.slots[arenaSlot].init = filled(max(arenaBytes, 1))
	}
	for _, o := range all {
		if slices.Contains(c.out, o) && !o.init {
			continue
		}
		buf := c.slots[o.view.Slot].init
		for i, p := range elemOffsets(o.view) {
			putElem(buf, o.dtype, p, o.val.Data[i])
		}
	}
	if c.coalesce {
		var views []kernels.View
		for _, o := range append(append([]*operand(nil), c.out...), c.in...) {
			views = append(views, o.view)
		}
		for k, v := range kernels.Coalesce(views) {
			if k < len(c.out) {
				c.out[k].view = v
			} else {
				c.in[k-len(c.out)].view = v
			}
		}
	}
	c.step.In = make([]kernels.View, len(c.in))
	for k, o := range c.in {
		c.step.In[k] = o.view
	}
	c.step.Out = make([]kernels.View, len(c.out))
	for k, o := range c.out {
		c.step.Out[k] = o.view
	}
}

func filled(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = fill
	}
	return b
}

// run executes the case on b through q and returns every slot's contents
// afterwards (nil for wrapped ones).
func (c *kcase) run(ctx context.Context, b kernels.Backend, q kernels.Queue) (got [][]byte, err error) {
	bufs := make([]kernels.Buffer, len(c.slots))
	defer func() {
		// A backend must not panic on a step the graph can produce; say
		// which one did instead of ending the test binary.
		if p := recover(); p != nil {
			got, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	defer func() {
		_ = q.Sync(ctx) // no work may still use a buffer that is freed
		for _, buf := range bufs {
			if buf != nil {
				b.Free(buf)
			}
		}
	}()
	for i, s := range c.slots {
		var err error
		if s.wrap {
			if bufs[i], err = b.Wrap(s.init); err != nil {
				return nil, fmt.Errorf("wrap of %d bytes: %w", len(s.init), err)
			}
			continue
		}
		if bufs[i], err = b.Alloc(len(s.init)); err != nil {
			return nil, fmt.Errorf("alloc of %d bytes: %w", len(s.init), err)
		}
		if err := q.Write(ctx, bufs[i], 0, s.init); err != nil {
			return nil, fmt.Errorf("write of slot %d: %w", i, err)
		}
	}
	step := c.step
	if err := q.Launch(ctx, &step, bufs); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	got = make([][]byte, len(c.slots))
	for i, s := range c.slots {
		if s.wrap {
			continue
		}
		got[i] = make([]byte, len(s.init))
		if err := q.Read(ctx, got[i], bufs[i], 0); err != nil {
			return nil, fmt.Errorf("read of slot %d: %w", i, err)
		}
	}
	return got, nil
}

// sideEffects reports a byte that changed outside the outputs' elements
// (an input overwritten, a write past a view), or "" when none did.
func (c *kcase) sideEffects(got [][]byte) string {
	owned := make([]map[int]bool, len(c.slots))
	for _, o := range c.out {
		sz := max(o.dtype.Size(), 1)
		m := owned[o.view.Slot]
		if m == nil {
			m = map[int]bool{}
			owned[o.view.Slot] = m
		}
		for _, p := range elemOffsets(o.view) {
			for k := range sz {
				m[p*sz+k] = true
			}
		}
	}
	for i, s := range c.slots {
		if s.wrap {
			continue
		}
		for j, b := range got[i] {
			if b != s.init[j] && !owned[i][j] {
				return fmt.Sprintf("byte %d of slot %d changed (%#x → %#x) outside the step's outputs", j, i, s.init[j], b)
			}
		}
	}
	return ""
}

// outputs decodes each output's logical values from slot contents.
func (c *kcase) outputs(got [][]byte) [][]float64 {
	outs := make([][]float64, len(c.out))
	for k, o := range c.out {
		buf := got[o.view.Slot]
		offs := elemOffsets(o.view)
		v := make([]float64, len(offs))
		for i, p := range offs {
			v[i] = getElem(buf, o.dtype, p)
		}
		outs[k] = v
	}
	return outs
}

// reference returns each output's float64 reference, as its dtype holds
// it.
func (c *kcase) reference() [][]float64 {
	ins := make([]ND, len(c.in))
	for k, o := range c.in {
		ins[k] = o.val
	}
	want := c.ref(ins)
	outs := make([][]float64, len(c.out))
	for k, o := range c.out {
		v := make([]float64, len(want[k].Data))
		for i, x := range want[k].Data {
			v[i] = roundTo(o.dtype, x)
		}
		outs[k] = v
	}
	return outs
}

// describe names the case for an error: op, attributes and operands.
func (c *kcase) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", c.group)
	if c.name != "" {
		fmt.Fprintf(&b, " (%s)", c.name)
	}
	b.WriteString(":")
	for _, o := range c.in {
		fmt.Fprintf(&b, " %s%v[%s]", o.dtype, o.view.Shape, o.what)
	}
	b.WriteString(" →")
	for _, o := range c.out {
		fmt.Fprintf(&b, " %s%v[%s]", o.dtype, o.view.Shape, o.what)
	}
	if c.step.Expr != nil {
		fmt.Fprintf(&b, "\n%s", c.step.Expr)
	}
	return b.String()
}
