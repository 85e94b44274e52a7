package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// Plan implements kernels.Planner: the steps' kernels are compiled now
// (generated ones by NVRTC, from the disk cache when it has them), and the
// run is recorded as a CUDA graph the second time it runs with a buffer
// table, then replayed with one cuGraphLaunch. The first run goes step by
// step, so that everything a run needs (workspace, cuBLASLt's algorithm
// choice) exists before a capture, which must not allocate.
func (b *Backend) Plan(steps []kernels.Step) (kernels.Plan, error) {
	return b.PlanFusing(steps, func(kernels.View) bool { return true })
}

// PlanFusing implements kernels.FusingPlanner: Plan, with the int8
// products merged with the norm before them and the elementwise step and
// cache update after them where readAfter allows (fuse.go).
func (b *Backend) PlanFusing(steps []kernels.Step, readAfter func(kernels.View) bool) (kernels.Plan, error) {
	p := &plan{b: b, steps: steps, fused: make([]*preparedFused, len(steps)), graphs: map[string]*capture{}}
	groups, merged := fuse(steps, readAfter)
	residuals := b.residualAdds(steps, readAfter, func(i int) bool { return groups[i] != nil || merged[i] })
	for _, r := range residuals {
		merged[r.add] = true
	}
	feeds := b.halfFeeds(steps, readAfter, func(i int) bool { return groups[i] != nil || merged[i] })
	copies, absorbed := transposeGroups(steps, func(i int) bool { return groups[i] != nil || merged[i] })
	combined := map[int]bool{}
	for _, g := range groups {
		if c := g.parts[0].comb; c >= 0 {
			combined[c] = true
		}
	}
	// The plan's generated kernels are lowered first and compiled all at
	// once (modules.functions), then each launch is set up with its own.
	var srcs []kernelSource
	var binds []func(driver.Function) error
	for i := range steps {
		s := &steps[i]
		if g := groups[i]; g != nil {
			name, src, err := g.source(steps)
			if err != nil {
				return nil, fmt.Errorf("cuda: step %d (%s) merged with %v: %w", i, s.Name, g.steps(), err)
			}
			srcs = append(srcs, kernelSource{name, src})
			binds = append(binds, func(fn driver.Function) error {
				if err := g.prepare(b, steps, fn); err != nil {
					return fmt.Errorf("cuda: step %d (%s) merged with %v: %w", i, s.Name, g.steps(), err)
				}
				return nil
			})
			p.items = append(p.items, planItem{step: i, lin: g})
			continue
		}
		if merged[i] || absorbed[i] {
			continue
		}
		if run := copies[i]; run != nil {
			p.items = append(p.items, planItem{step: i, copies: run})
			continue
		}
		p.scratch = max(p.scratch, scratchBytes(s, b))
		halfOut := feeds != nil && feeds[i]
		p.items = append(p.items, planItem{step: i, partials: combined[i], halfOut: halfOut, halfA: i > 0 && feeds != nil && feeds[i-1], res: residuals[i]})
		var f *preparedFused
		var src kernelSource
		var err error
		switch s.Op {
		case kernels.OpFused:
			if _, ok := transposeOf(s); ok {
				continue // forge_transpose, launched as the step
			}
			if halfOut {
				h := b.halfStep(s)
				f, src, err = b.prepareFused(&h)
				break
			}
			f, src, err = b.prepareFused(s)
		case kernels.OpReduce:
			f, src, err = b.prepareReduce(s)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cuda: step %d (%s): %w", i, s.Name, err)
		}
		p.fused[i] = f
		if !f.empty {
			srcs = append(srcs, src)
			binds = append(binds, func(fn driver.Function) error { f.fn = fn; return nil })
		}
	}
	fns, err := b.mods.functions(srcs)
	if err != nil {
		return nil, err
	}
	for i, bind := range binds {
		if err := bind(fns[i]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// planItem is one launch of a plan: a step, or a product with the steps
// merged into it.
type planItem struct {
	step int
	lin  *linGroup
	// partials: the step is a split attention whose combine a group
	// after it does (fusedLinear.comb).
	partials bool
	// halfOut: the step leaves its output in half precision in the
	// queue's scratch, and halfA: the product takes its left operand
	// from there (halfin.go).
	halfOut, halfA bool
	// res: the product computes the sum after it (residual.go).
	res *residualAdd
	// copies: the step and those after it that forge_transpose_many
	// runs with it (transposeGroups).
	copies []int
}

// preparedFused is a generated kernel (a fused step or a reduction)
// lowered and compiled once: prepareFused and prepareReduce lower it and
// return its source, and Plan sets fn once that is compiled.
type preparedFused struct {
	fn     driver.Function
	slots  []int // buffer slot of each operand, output first
	params []byte
	grid   uint32
	block  uint32
	empty  bool
}

func (b *Backend) prepareReduce(s *kernels.Step) (*preparedFused, kernelSource, error) {
	r, err := codegen.LowerReduce(s, codegen.CUDA)
	if err != nil {
		return nil, kernelSource{}, err
	}
	if r.Outputs == 0 {
		return &preparedFused{empty: true}, kernelSource{}, nil
	}
	src, err := r.Kernel.Source(codegen.CUDA)
	if err != nil {
		return nil, kernelSource{}, err
	}
	pf := &preparedFused{params: r.Params(), slots: []int{s.Out[0].Slot, s.In[0].Slot}, block: codegen.ReduceThreads, grid: min(uint32(r.Outputs), uint32(b.info.SMs*16))}
	if r.Kernel.PerThread {
		pf.block, pf.grid = 128, min(blocks(int64(r.Outputs), 128), uint32(b.info.SMs*16))
	}
	return pf, kernelSource{r.Kernel.Name, src}, nil
}

func (b *Backend) prepareFused(s *kernels.Step) (*preparedFused, kernelSource, error) {
	f, err := codegen.LowerFused(s)
	if err != nil {
		return nil, kernelSource{}, err
	}
	if f.Len() == 0 {
		return &preparedFused{empty: true}, kernelSource{}, nil
	}
	src, err := f.Kernel.Source(codegen.CUDA)
	if err != nil {
		return nil, kernelSource{}, err
	}
	pf := &preparedFused{params: f.Params(), block: 256, grid: min(blocks(int64(f.Len()), 256), uint32(b.info.SMs*32))}
	for _, v := range f.Views {
		pf.slots = append(pf.slots, v.Slot)
	}
	return pf, kernelSource{f.Kernel.Name, src}, nil
}

// launch runs a prepared fused step.
func (f *preparedFused) launch(q *queue, bufs []kernels.Buffer) error {
	if f.empty {
		return nil
	}
	q.b.dispatches.Add(1)
	args := q.args.Reset()
	for _, s := range f.slots {
		if s == scratchSlot {
			args.Ptr(q.scratch.ptr)
			continue
		}
		args.Ptr(bufs[s].(*buffer).ptr)
	}
	args.Bytes(f.params)
	return q.b.drv.Launch(f.fn, driver.Dim3{X: f.grid}, driver.Dim3{X: f.block}, 0, q.stream, args)
}

// plan is a run of steps with its recorded graphs, one per buffer table
// (and queue: the error word and workspace are the queue's).
type plan struct {
	b       *Backend
	steps   []kernels.Step
	fused   []*preparedFused
	items   []planItem // the launches, in order
	scratch int

	mu        sync.Mutex
	graphs    map[string]*capture
	uncapture bool // a capture failed once: launch step by step
}

// capture is the state of one buffer table: seen once, or recorded.
type capture struct {
	runs int
	exec driver.GraphExec
}

// maxGraphs bounds the recorded graphs of one plan: programs keep their
// buffers, so a few tables cover the pooled programs of a model.
const maxGraphs = 16

// Run enqueues the plan on q: a replay when it was recorded for this
// buffer table, else the steps one by one (and a recording on the second
// run).
func (p *plan) Run(ctx context.Context, kq kernels.Queue, bufs []kernels.Buffer) error {
	q, ok := kq.(*queue)
	if !ok {
		return errors.New("cuda: plan run on a queue of another backend")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := q.ensureScratch(p.scratch); err != nil {
		return err
	}
	key := p.key(q, bufs)
	p.mu.Lock()
	c := p.graphs[string(key)]
	if c == nil && len(p.graphs) < maxGraphs {
		c = &capture{}
		p.graphs[string(key)] = c
	}
	record := c != nil && c.exec == 0 && c.runs == 1 && !p.uncapture && p.b.prof == nil
	if c != nil {
		c.runs++
	}
	p.mu.Unlock()
	return p.b.th.Do(func() error {
		if err := q.flush(); err != nil {
			return err
		}
		if c != nil && c.exec != 0 {
			q.b.dispatches.Add(1)
			return p.b.drv.GraphLaunch(c.exec, q.stream)
		}
		if !record {
			return p.launchAll(q, bufs)
		}
		exec, err := p.record(q, bufs)
		if err != nil {
			// Some work cannot be captured (the driver says why): run
			// step by step from now on.
			p.mu.Lock()
			p.uncapture = true
			p.mu.Unlock()
			return p.launchAll(q, bufs)
		}
		p.mu.Lock()
		c.exec = exec
		p.mu.Unlock()
		q.b.dispatches.Add(1)
		return p.b.drv.GraphLaunch(exec, q.stream)
	})
}

// launchAll launches every item (on the backend's thread).
func (p *plan) launchAll(q *queue, bufs []kernels.Buffer) error {
	if p.b.prof != nil {
		return p.b.prof.run(p.b, q, len(p.items), p.profileKey, func(i int) error { return p.launchOne(q, bufs, i) })
	}
	for i := range p.items {
		if err := p.launchOne(q, bufs, i); err != nil {
			return err
		}
	}
	return nil
}

// launchOne launches item i.
func (p *plan) launchOne(q *queue, bufs []kernels.Buffer, i int) error {
	it := p.items[i]
	var err error
	switch {
	case it.lin != nil:
		err = it.lin.launch(q, p.steps, bufs)
	case it.copies != nil:
		q.b.dispatches.Add(1)
		err = q.transposeMany(p.steps, it.copies, bufs)
	case it.partials:
		err = q.attention(&p.steps[it.step], bufs, false)
	case p.fused[it.step] != nil:
		err = p.fused[it.step].launch(q, bufs)
	case it.halfOut: // a layer norm (feedsHalf)
		q.b.dispatches.Add(1)
		err = q.layerNorm(&p.steps[it.step], bufs, true)
	case it.halfA || it.res != nil:
		q.b.dispatches.Add(1)
		err = q.matmul(&p.steps[it.step], bufs, it.halfA, it.res)
	default:
		err = q.launch(&p.steps[it.step], bufs)
	}
	if err != nil {
		return fmt.Errorf("step %d (%s): %w", it.step, p.steps[it.step].Name, err)
	}
	return nil
}

// profileKey names item i in profiles: the kind of step and its output
// shape, and what tells alike steps apart.
func (p *plan) profileKey(i int) string {
	it := p.items[i]
	if it.lin != nil {
		return it.lin.profileKey(p.steps)
	}
	s := &p.steps[it.step]
	key := s.Op.String()
	if len(s.Out) > 0 {
		key += fmt.Sprint(s.Out[0].Shape)
	}
	switch s.Op {
	case kernels.OpFused, kernels.OpReduce:
		key += " " + s.Name
	case kernels.OpAttention:
		// A decoder's self- and cross-attention share the output shape;
		// the keys tell them apart.
		key += fmt.Sprintf(" keys %v", s.In[1].Shape)
	}
	return key
}

// record captures the steps on q's stream into an instantiated graph.
func (p *plan) record(q *queue, bufs []kernels.Buffer) (driver.GraphExec, error) {
	d := p.b.drv
	if err := d.StreamBeginCapture(q.stream, driver.CaptureThreadLocal); err != nil {
		return 0, err
	}
	lerr := p.launchAll(q, bufs)
	g, err := d.StreamEndCapture(q.stream)
	if lerr != nil || err != nil {
		if g != 0 {
			_ = d.GraphDestroy(g)
		}
		return 0, errors.Join(lerr, err)
	}
	defer d.GraphDestroy(g) //nolint:errcheck // the instantiated graph does not need it
	return d.GraphInstantiate(g, 0)
}

// key identifies a buffer table on a queue by device addresses: a graph
// recorded for them is valid whenever the same addresses come back. It is
// the addresses' bytes, built in the queue's keyBuf (a decoder step's table
// has some 180 buffers, and formatting them as text took ~10 µs a token);
// the map lookup reads it without copying.
func (p *plan) key(q *queue, bufs []kernels.Buffer) []byte {
	k := q.keyBuf[:0]
	k = binary.LittleEndian.AppendUint64(k, uint64(q.errDev))
	var scratch, ws driver.DevicePtr
	if q.scratch != nil {
		scratch = q.scratch.ptr
	}
	if q.blasWS != nil {
		ws = q.blasWS.ptr
	}
	k = binary.LittleEndian.AppendUint64(k, uint64(scratch))
	k = binary.LittleEndian.AppendUint64(k, uint64(ws))
	for _, x := range bufs {
		var a driver.DevicePtr
		if b, ok := x.(*buffer); ok && b != nil {
			a = b.ptr
		}
		k = binary.LittleEndian.AppendUint64(k, uint64(a))
	}
	q.keyBuf = k
	return k
}

// Close releases the recorded graphs.
func (p *plan) Close() {
	p.mu.Lock()
	graphs := p.graphs
	p.graphs = nil
	p.mu.Unlock()
	_ = p.b.th.Do(func() error {
		for _, c := range graphs {
			if c.exec != 0 {
				_ = p.b.drv.GraphExecDestroy(c.exec)
			}
		}
		return nil
	})
}
