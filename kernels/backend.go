package kernels

import "context"

// Buffer is a block of memory owned by a backend. Host code never touches its
// contents directly: it goes through a Queue's Write and Read.
type Buffer interface {
	// Bytes returns the buffer's size in bytes.
	Bytes() int
}

// View describes one operand of a Step: a strided window of elements inside a
// buffer. Slot indexes the buffer table passed to Queue.Launch, so a
// compiled schedule can be shared by many programs, each with its own buffers.
type View struct {
	Slot    int   // index into the buffer table
	Offset  int   // first element, in elements of DType
	DType   DType // element type
	Shape   []int // extent of each dimension
	Strides []int // distance between neighbours of each dimension, in elements
}

// Len returns the number of elements the view covers.
func (v View) Len() int {
	n := 1
	for _, d := range v.Shape {
		n *= d
	}
	return n
}

// Contiguous reports whether the view is dense row-major.
func (v View) Contiguous() bool {
	want := 1
	for i := len(v.Shape) - 1; i >= 0; i-- {
		if v.Shape[i] != 1 && v.Strides[i] != want {
			return false
		}
		want *= v.Shape[i]
	}
	return true
}

// Span returns the half-open range of elements [lo, hi) that the view can
// reach in its buffer (empty when the view has no elements).
func (v View) Span() (lo, hi int) {
	lo, hi = v.Offset, v.Offset
	for i, d := range v.Shape {
		if d == 0 {
			return v.Offset, v.Offset
		}
		if st := v.Strides[i]; st >= 0 {
			hi += (d - 1) * st
		} else {
			lo += (d - 1) * st
		}
	}
	return lo, hi + 1
}

// Step is one kernel launch: an operation with its operands.
type Step struct {
	Op   Op
	In   []View
	Out  []View
	Attr any    // the op's attribute struct (MatMulAttr, ConvAttr, ...), nil if none
	Expr *Expr  // OpFused only
	Name string // the graph node it came from, for profiles and errors
	// F32: the step computes in float32 whatever precision the backend's
	// products run in (kernels.Options.Precision): its graph asked for
	// full precision (graph.Graph.FullPrecision).
	F32 bool
}

// Stats are counters a backend keeps for scorecards.
type Stats struct {
	Dispatches int64 // kernel launches since the backend was created
	PeakBytes  int64 // high-water mark of live buffer bytes
	LiveBytes  int64 // bytes allocated and not yet freed
}

// Backend owns one device's memory and hands out the queues that run work
// on it. All of its methods are safe for concurrent use.
type Backend interface {
	// Name is a short identifier ("cpu", "cuda", "metal").
	Name() string
	// Device describes the hardware and fast paths in use, for scorecards.
	Device() string
	// Alloc returns a zero-filled buffer of the given size.
	Alloc(bytes int) (Buffer, error)
	// Free releases a buffer from Alloc or Wrap. The caller makes sure no
	// queue still has work that uses it.
	Free(b Buffer)
	// Wrap makes host bytes (for example an mmap'd weight) available as a
	// read-only buffer. Host backends reference the memory without copying;
	// device backends upload it once. The caller keeps host alive and
	// unchanged while the buffer is in use.
	Wrap(host []byte) (Buffer, error)
	// NewQueue returns a new queue (a stream) of this device.
	NewQueue() (Queue, error)
	// Stats returns the backend's counters.
	Stats() Stats
}

// Queue is an ordered stream of work on one backend: writes, launches and
// reads take effect in the order they are made. Work on different queues of
// one backend is unordered: it may overlap, and a buffer written through one
// queue is safe to use on another only after the first queue has been
// waited for (Read or Sync returned).
//
// A Queue is used by one goroutine at a time; different queues may be used
// by different goroutines at once.
type Queue interface {
	// Write copies src into dst at byte offset off, after the work already
	// on the queue. src may be reused as soon as Write returns.
	Write(ctx context.Context, dst Buffer, off int, src []byte) error
	// Launch enqueues one step; bufs resolves the Slot of every View. It may
	// return before the step has run.
	Launch(ctx context.Context, s *Step, bufs []Buffer) error
	// Read waits for the work on this queue (and only this queue), then
	// copies from src at byte offset off into dst.
	Read(ctx context.Context, dst []byte, src Buffer, off int) error
	// Sync waits until the work on this queue has finished.
	Sync(ctx context.Context) error
	// Close releases the queue after waiting for its work.
	Close() error
}

// Write is one copy of a BatchWriter's WriteBatch: Src into Dst at byte
// offset Off.
type Write struct {
	Dst Buffer
	Off int
	Src []byte
}

// BatchWriter is an optional capability of a Queue: it makes several
// writes at once, with the effect of Write on each in order, so a backend
// that stages writes can copy them on several cores. The graph engine
// binds a program's inputs through it: 32 windows of Whisper features are
// 32 writes of 960 KB, which one core copied into pinned memory in 4.6 ms
// on the H100's host, as long as the GPU took to encode them.
type BatchWriter interface {
	// WriteBatch makes the writes; every Src may be reused as soon as it
	// returns.
	WriteBatch(ctx context.Context, ws []Write) error
}

// Supporter is an optional capability of a Backend: it says which steps the
// backend runs. The graph compiler runs steps a backend does not support on
// the host backend and inserts the transfers. A backend without the method
// supports every step.
type Supporter interface {
	// Supports reports whether the backend can run s (its op, attributes,
	// dtypes and layouts).
	Supports(s *Step) bool
}

// Planner is an optional capability of a Backend: the graph engine hands it
// each compiled run of consecutive steps once, so the backend can resolve
// dispatch ahead of time or record the run as one replayable unit (a CUDA
// graph, a pre-encoded Metal command buffer).
type Planner interface {
	// Plan prepares steps, which stay unchanged for the plan's lifetime.
	// Running the plan must have the effect of launching each step in order.
	Plan(steps []Step) (Plan, error)
}

// FusingPlanner is an optional capability of a Planner that merges steps
// (a product and the elementwise step after it, a norm into the products
// that read it) when the intermediate tensor between them is not needed.
// Whether it is depends on what runs after the plan, which only the
// caller knows, so the caller says.
type FusingPlanner interface {
	// PlanFusing is Plan, except that running the plan may leave unwritten
	// the elements a step writes that readAfter reports nobody reads after
	// the plan (no later step, host copy or caller). readAfter is only
	// called during PlanFusing.
	PlanFusing(steps []Step, readAfter func(v View) bool) (Plan, error)
}

// Plan is a backend's prepared form of a run of steps.
type Plan interface {
	// Run enqueues every step of the plan on q with the buffer table bufs.
	// A program passes the same table on every run, so a backend may record
	// work once per table and replay it; a table containing a buffer freed
	// since must not be replayed.
	Run(ctx context.Context, q Queue, bufs []Buffer) error
	// Close releases what the plan holds.
	Close()
}

// HostMapper is an optional capability of a Backend whose memory the host
// can address directly (the CPU itself, unified-memory GPUs). The engine
// then runs host steps on that memory without copies, after waiting for the
// device's queue.
type HostMapper interface {
	// HostBytes returns the host view of b, or false when b has none.
	HostBytes(b Buffer) ([]byte, bool)
}

// Aliaser is an optional capability of a host backend: it makes a writable
// buffer over memory it does not own (a unified-memory device buffer), so
// host steps run on the device's memory in place. Unlike Wrap, the
// contents may change between runs.
type Aliaser interface {
	// Alias returns a buffer over mem; the caller keeps mem alive.
	Alias(mem []byte) (Buffer, error)
}
