package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tensorforge/forge/stage"
	"go.uber.org/zap"
)

// DefaultBufferSize is the capacity of a stage's input queue unless the
// pipeline or the stage says otherwise: deep enough to absorb jitter between
// neighbouring stages, shallow enough that memory stays bounded and latency
// low.
const DefaultBufferSize = 8

var (
	// ErrStarted is returned by Start (and Run) on a pipeline that has
	// already been started: a pipeline runs once.
	ErrStarted = errors.New("pipeline already started")
	// ErrNotStarted is returned by inlets and outlets used before Start.
	ErrNotStarted = errors.New("pipeline not started")
	// ErrClosed is returned by Inlet.Send after Close, or once the pipeline
	// has ended.
	ErrClosed = errors.New("pipeline input closed")
	// ErrStopped is the cause of cancellation when Stop is called.
	ErrStopped = fmt.Errorf("pipeline stopped: %w", context.Canceled)

	errFinished = errors.New("pipeline finished")
)

// Pipeline is a graph of stages under construction or running. Build it from
// one goroutine; after Start, Metrics, Stop and Wait may be called from any.
type Pipeline struct {
	name   string
	defBuf int
	log    *zap.Logger

	nodes    []*node
	names    map[string]bool
	ports    []port
	buildErr error

	state       atomic.Int32 // 0 building, 1 started
	live        atomic.Bool  // set once ctx, cancel and started are set
	parent      context.Context
	ctx         context.Context
	cancel      context.CancelCauseFunc
	started     time.Time
	wall        atomic.Int64 // ns, set when finished
	wg          sync.WaitGroup
	mu          sync.Mutex
	first       error // first failure of a stage
	interrupted atomic.Bool
	err         error // final result, valid once done is closed
	done        chan struct{}
}

// node is one stage of the graph. run is nil for inlets and outlets, whose
// goroutine is the caller's.
type node struct {
	name     string
	m        *stage.Metrics
	run      func(ctx context.Context) error
	closeOut func()
}

// port is the untyped view of a Port for validation.
type port interface{ check() error }

// Option configures a pipeline.
type Option func(*Pipeline)

// DefaultBuffer sets the input queue capacity of stages that do not set
// their own (n ≥ 0; 0 makes unbuffered hand-offs).
func DefaultBuffer(n int) Option {
	return func(p *Pipeline) {
		if n >= 0 {
			p.defBuf = n
		}
	}
}

// Logger sets the logger for stage start, end and failure (debug level);
// nothing is logged per frame. The default discards.
func Logger(l *zap.Logger) Option {
	return func(p *Pipeline) {
		if l != nil {
			p.log = l
		}
	}
}

// StageOption configures one stage as it is added.
type StageOption func(*stageConfig)

type stageConfig struct{ buffer int }

// Buffer sets the capacity of this stage's input queue (n ≥ 0).
func Buffer(n int) StageOption {
	return func(c *stageConfig) {
		if n >= 0 {
			c.buffer = n
		}
	}
}

// New returns an empty pipeline called name (the scorecard's pipeline name).
func New(name string, opts ...Option) *Pipeline {
	p := &Pipeline{name: name, defBuf: DefaultBufferSize, log: zap.NewNop(), names: map[string]bool{}, done: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Name returns the pipeline's name.
func (p *Pipeline) Name() string { return p.name }

func (p *Pipeline) buildFail(format string, args ...any) {
	if p.buildErr == nil {
		p.buildErr = fmt.Errorf("pipeline %q: "+format, append([]any{p.name}, args...)...)
	}
}

func (p *Pipeline) config(opts []StageOption) stageConfig {
	c := stageConfig{buffer: p.defBuf}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func (p *Pipeline) addNode(name string, kind stage.Kind) *node {
	if p.state.Load() != 0 {
		p.buildFail("stage %q added after Start", name)
	}
	if name == "" {
		p.buildFail("a %s stage has no name", kind)
	}
	if p.names[name] {
		p.buildFail("two stages are named %q; names must be unique (they key the metrics)", name)
	}
	p.names[name] = true
	n := &node{name: name, m: stage.NewMetrics(name, kind), closeOut: func() {}}
	p.nodes = append(p.nodes, n)
	return n
}

// Port is the output of one stage, to be connected to exactly one consumer
// (use Tee to feed several).
type Port[T any] struct {
	p    *Pipeline
	from string
	to   string
	ch   chan stage.Frame[T]
}

func newPort[T any](p *Pipeline, from string) *Port[T] {
	pt := &Port[T]{p: p, from: from}
	p.ports = append(p.ports, pt)
	return pt
}

func (pt *Port[T]) check() error {
	if pt.ch == nil {
		return fmt.Errorf("pipeline %q: output of stage %q is not connected to anything", pt.p.name, pt.from)
	}
	return nil
}

// connect makes the channel from pt into the consumer, sized buf.
func connect[T any](p *Pipeline, pt *Port[T], consumer *node, buf int) chan stage.Frame[T] {
	switch {
	case pt == nil:
		p.buildFail("stage %q is fed by a nil port", consumer.name)
		return nil
	case pt.p != p:
		p.buildFail("stage %q is fed by a port of pipeline %q", consumer.name, pt.p.name)
		return nil
	case pt.ch != nil:
		p.buildFail("output of stage %q feeds both %q and %q; use Tee to branch", pt.from, pt.to, consumer.name)
		return nil
	}
	pt.ch = make(chan stage.Frame[T], buf)
	pt.to = consumer.name
	consumer.m.SetQueueCap(buf)
	return pt.ch
}

// From adds a source.
func From[T any](p *Pipeline, src *stage.Source[T]) *Port[T] {
	n := p.addNode(src.Name(), stage.KindSource)
	out := newPort[T](p, n.name)
	n.run = func(ctx context.Context) error { return src.Run(ctx, out.ch, n.m) }
	n.closeOut = func() { close(out.ch) }
	return out
}

// Then adds stage s fed by in and returns its output.
func Then[In, Out any](in *Port[In], s *stage.Stage[In, Out], opts ...StageOption) *Port[Out] {
	p := in.p
	c := p.config(opts)
	n := p.addNode(s.Name(), s.Kind())
	inCh := connect(p, in, n, c.buffer)
	out := newPort[Out](p, n.name)
	n.run = func(ctx context.Context) error { return s.Run(ctx, inCh, out.ch, n.m) }
	n.closeOut = func() { close(out.ch) }
	return out
}

// To adds sink s fed by in.
func To[T any](in *Port[T], s *stage.Sink[T], opts ...StageOption) {
	p := in.p
	c := p.config(opts)
	n := p.addNode(s.Name(), stage.KindSink)
	inCh := connect(p, in, n, c.buffer)
	n.run = func(ctx context.Context) error { return s.Run(ctx, inCh, n.m) }
}

// Tee adds a stage called name that copies every frame of in to n outputs.
// Payloads are shared between branches, which must not modify them.
func Tee[T any](in *Port[T], name string, n int, opts ...StageOption) []*Port[T] {
	p := in.p
	c := p.config(opts)
	nd := p.addNode(name, stage.KindTee)
	if n < 1 {
		p.buildFail("tee %q needs at least one output, got %d", name, n)
	}
	inCh := connect(p, in, nd, c.buffer)
	outs := make([]*Port[T], max(n, 0))
	for i := range outs {
		outs[i] = newPort[T](p, name)
	}
	nd.run = func(ctx context.Context) error {
		chans := make([]chan<- stage.Frame[T], len(outs))
		for i, o := range outs {
			chans[i] = o.ch
		}
		return stage.Tee(ctx, inCh, chans, nd.m)
	}
	nd.closeOut = func() {
		for _, o := range outs {
			close(o.ch)
		}
	}
	return outs
}

// Merge adds a stage called name that forwards the frames of all ins to one
// output as they arrive. Order within each input is kept; order between
// inputs is not.
func Merge[T any](p *Pipeline, name string, ins []*Port[T], opts ...StageOption) *Port[T] {
	c := p.config(opts)
	n := p.addNode(name, stage.KindMerge)
	if len(ins) == 0 {
		p.buildFail("merge %q has no inputs", name)
	}
	chans := make([]<-chan stage.Frame[T], len(ins))
	for i, in := range ins {
		chans[i] = connect(p, in, n, c.buffer)
	}
	out := newPort[T](p, name)
	n.run = func(ctx context.Context) error { return stage.Merge(ctx, chans, out.ch, n.m) }
	n.closeOut = func() { close(out.ch) }
	return out
}

// Start checks the graph and starts one goroutine per stage. It returns at
// once; use Wait for the result. Cancelling ctx stops the pipeline.
func (p *Pipeline) Start(ctx context.Context) error {
	if !p.state.CompareAndSwap(0, 1) {
		return ErrStarted
	}
	err := p.buildErr
	if err == nil {
		for _, pt := range p.ports {
			if err = pt.check(); err != nil {
				break
			}
		}
	}
	goroutines := 0
	for _, n := range p.nodes {
		if n.run != nil {
			goroutines++
		}
	}
	if err == nil && goroutines == 0 {
		err = fmt.Errorf("pipeline %q has no stages", p.name)
	}
	p.parent = ctx
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	p.started = time.Now()
	p.live.Store(true)
	if err != nil {
		p.err = err
		p.cancel(errFinished)
		close(p.done)
		return err
	}
	p.log.Debug("pipeline start", zap.String("pipeline", p.name), zap.Int("stages", len(p.nodes)))
	for _, n := range p.nodes {
		if n.run == nil {
			continue
		}
		p.wg.Add(1)
		go p.runNode(n)
	}
	go p.finish()
	return nil
}

func (p *Pipeline) runNode(n *node) {
	defer p.wg.Done()
	err := n.run(p.ctx)
	if err != nil {
		p.fail(n, err)
	}
	// Close only after a failure has cancelled the context, so the next
	// stage never mistakes an upstream failure for the end of its input.
	n.closeOut()
}

// fail records err unless it is only the echo of an earlier cancellation.
func (p *Pipeline) fail(n *node, err error) {
	if cerr := p.ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		p.interrupted.Store(true)
		return
	}
	var se *stage.Error
	if !errors.As(err, &se) {
		err = &stage.Error{Stage: n.name, Err: err}
	}
	p.mu.Lock()
	first := p.first == nil
	if first {
		p.first = err
	}
	p.mu.Unlock()
	if first {
		p.log.Debug("stage failed", zap.String("pipeline", p.name), zap.String("stage", n.name), zap.Error(err))
		p.cancel(err)
	}
}

func (p *Pipeline) finish() {
	p.wg.Wait()
	p.wall.Store(int64(time.Since(p.started)))
	p.mu.Lock()
	first := p.first
	p.mu.Unlock()
	switch {
	case first != nil:
		p.err = fmt.Errorf("pipeline %q: %w", p.name, first)
	case p.interrupted.Load():
		p.err = fmt.Errorf("pipeline %q: %w", p.name, context.Cause(p.ctx))
	}
	p.log.Debug("pipeline done", zap.String("pipeline", p.name), zap.Duration("wall", time.Since(p.started)), zap.Error(p.err))
	p.cancel(errFinished)
	close(p.done)
}

// abortErr is the error an inlet or outlet reports when the pipeline's
// context is done: nil if it ended cleanly.
func (p *Pipeline) abortErr() error {
	p.mu.Lock()
	first := p.first
	p.mu.Unlock()
	if first != nil {
		return fmt.Errorf("pipeline %q: %w", p.name, first)
	}
	if p.ctx.Err() == nil {
		return nil
	}
	c := context.Cause(p.ctx)
	if c == errFinished {
		<-p.done
		return p.err
	}
	return fmt.Errorf("pipeline %q: %w", p.name, c)
}

// Wait blocks until every stage has returned and reports the first stage
// error (a *stage.Error naming the stage, wrapped with the pipeline name),
// the cancellation cause if the pipeline was cancelled or stopped, or nil.
func (p *Pipeline) Wait() error {
	if !p.live.Load() {
		return ErrNotStarted
	}
	<-p.done
	return p.err
}

// Run starts the pipeline and waits for it: the batch form, for pipelines
// whose sources end by themselves.
func (p *Pipeline) Run(ctx context.Context) error {
	if err := p.Start(ctx); err != nil {
		return err
	}
	return p.Wait()
}

// Stop cancels a running pipeline (it does nothing before Start); Wait then returns an error wrapping
// ErrStopped (and context.Canceled).
func (p *Pipeline) Stop() {
	if p.live.Load() {
		p.cancel(ErrStopped)
	}
}

// Done returns a channel closed when every stage has returned.
func (p *Pipeline) Done() <-chan struct{} { return p.done }
