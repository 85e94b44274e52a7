package kernels

import "context"

// Buffer is a block of memory owned by a backend. Host code never touches its
// contents directly: it goes through Backend.Write and Backend.Read.
type Buffer interface {
	// Bytes returns the buffer's size in bytes.
	Bytes() int
}

// View describes one operand of a Step: a strided window of elements inside a
// buffer. Slot indexes the buffer table passed to Backend.Launch, so a
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

// Step is one kernel launch: an operation with its operands.
type Step struct {
	Op   Op
	In   []View
	Out  []View
	Attr any    // the op's attribute struct (MatMulAttr, ConvAttr, ...), nil if none
	Expr *Expr  // OpFused only
	Name string // the graph node it came from, for profiles and errors
}

// Stats are counters a backend keeps for scorecards.
type Stats struct {
	Dispatches int64 // kernel launches since the backend was created
	PeakBytes  int64 // high-water mark of live buffer bytes
	LiveBytes  int64 // bytes allocated and not yet freed
}

// Backend runs Steps on one device.
//
// A Backend is used by one goroutine at a time unless its documentation says
// otherwise; the graph engine serialises access. Launch may return before the
// work is done: Read and Sync wait for all previously launched work.
type Backend interface {
	// Name is a short identifier ("cpu", "cuda", "metal").
	Name() string
	// Device describes the hardware and fast paths in use, for scorecards.
	Device() string
	// Alloc returns a zero-filled buffer of the given size.
	Alloc(bytes int) (Buffer, error)
	// Free releases a buffer from Alloc or Wrap.
	Free(b Buffer)
	// Wrap makes host bytes (for example an mmap'd weight) available as a
	// read-only buffer. Host backends reference the memory without copying;
	// device backends upload it once. The caller keeps host alive while the
	// buffer is in use.
	Wrap(host []byte) (Buffer, error)
	// Write copies src into dst at byte offset off.
	Write(ctx context.Context, dst Buffer, off int, src []byte) error
	// Read waits for pending work, then copies from src at byte offset off
	// into dst.
	Read(ctx context.Context, dst []byte, src Buffer, off int) error
	// Launch enqueues one step; bufs resolves the Slot of every View.
	Launch(ctx context.Context, s *Step, bufs []Buffer) error
	// Sync waits until every launched step has finished.
	Sync(ctx context.Context) error
	// Stats returns the backend's counters.
	Stats() Stats
}
