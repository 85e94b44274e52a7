package driver

import (
	"encoding/binary"
	"math"
	"runtime"
	"unsafe"
)

// Args holds a kernel's arguments in the form cuLaunchKernel reads them:
// kernelParams is an array with one pointer per kernel parameter, each
// pointing at that parameter's value. Values are copied into Args as they
// are added (each in its own 8-byte-aligned slot), so the Go variables they
// came from may change at once.
//
// During Launch the value block and the pointer table are pinned with a
// runtime.Pinner, which is what makes it legal to hand C an array of
// pointers into Go memory; the driver copies the values before
// cuLaunchKernel returns (also when a stream is being captured into a
// graph), so an Args may be reset and refilled right after Launch. An Args
// is used by one goroutine at a time; reusing one per call site keeps a
// launch free of allocations.
type Args struct {
	vals []uint64  // the values; a parameter of n bytes takes ceil(n/8) slots
	offs []uintptr // byte offset of each parameter's value in vals
	ptrs []uintptr // kernelParams, rebuilt at every launch from offs
	pin  runtime.Pinner
}

// Reset empties a for the next launch, keeping its storage.
func (a *Args) Reset() *Args {
	a.vals, a.offs = a.vals[:0], a.offs[:0]
	return a
}

// Len returns the number of parameters added.
func (a *Args) Len() int { return len(a.offs) }

// slot appends one 8-byte slot holding v (little-endian: a 4-byte value
// sits at the slot's start, where the driver reads it).
func (a *Args) slot(v uint64) *Args {
	a.offs = append(a.offs, uintptr(len(a.vals))*8)
	a.vals = append(a.vals, v)
	return a
}

// Ptr adds a device pointer parameter (T* in the kernel).
func (a *Args) Ptr(p DevicePtr) *Args { return a.slot(uint64(p)) }

// U64 adds an unsigned long long / uint64_t parameter.
func (a *Args) U64(v uint64) *Args { return a.slot(v) }

// I64 adds a long long / int64_t parameter.
func (a *Args) I64(v int64) *Args { return a.slot(uint64(v)) }

// U32 adds an unsigned int parameter.
func (a *Args) U32(v uint32) *Args { return a.slot(uint64(v)) }

// I32 adds an int parameter.
func (a *Args) I32(v int32) *Args { return a.slot(uint64(uint32(v))) }

// F32 adds a float parameter.
func (a *Args) F32(v float32) *Args { return a.slot(uint64(math.Float32bits(v))) }

// F64 adds a double parameter.
func (a *Args) F64(v float64) *Args { return a.slot(math.Float64bits(v)) }

// Bytes adds a parameter passed by value whose bytes are b: a struct laid
// out as the kernel's C declaration lays it out.
func (a *Args) Bytes(b []byte) *Args {
	a.offs = append(a.offs, uintptr(len(a.vals))*8)
	for i := 0; i < len(b); i += 8 {
		var w [8]byte
		copy(w[:], b[i:])
		a.vals = append(a.vals, binary.NativeEndian.Uint64(w[:]))
	}
	if len(b) == 0 {
		a.vals = append(a.vals, 0) // a distinct address for an empty struct
	}
	return a
}

// value returns the bytes of parameter i (n of them), for tests.
func (a *Args) value(i, n int) []byte {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a.vals))), len(a.vals)*8)
	return b[a.offs[i] : int(a.offs[i])+n]
}

// kernelParams rebuilds the pointer table from the value offsets: the
// values' address is only final once every parameter has been added.
func (a *Args) kernelParams() []uintptr {
	base := uintptr(unsafe.Pointer(&a.vals[0]))
	a.ptrs = a.ptrs[:0]
	for _, off := range a.offs {
		a.ptrs = append(a.ptrs, base+off)
	}
	return a.ptrs
}

// pinned returns the kernelParams array of a (0 for no parameters or a
// nil a) with its values and pointer table pinned until unpin.
func (a *Args) pinned() uintptr {
	if a == nil || len(a.offs) == 0 {
		return 0
	}
	table := a.kernelParams()
	a.pin.Pin(&a.vals[0])
	a.pin.Pin(&table[0])
	return uintptr(unsafe.Pointer(&table[0]))
}

// unpin releases what pinned pinned.
func (a *Args) unpin() {
	if a != nil {
		a.pin.Unpin()
	}
}

// Launch enqueues kernel f on stream s with the given grid and block
// extents (a zero extent counts as 1), sharedBytes of dynamic shared
// memory and the parameters in args (nil for none). It returns once the
// launch is enqueued (or recorded, while s is being captured).
func (d *Driver) Launch(f Function, grid, block Dim3, sharedBytes uint32, s Stream, args *Args) error {
	grid, block = grid.orOne(), block.orOne()
	params := args.pinned()
	defer args.unpin()
	return call(&d.launchKernel, uintptr(f),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
		uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(sharedBytes), uintptr(s), params, 0)
}

// CanLaunchEarly reports whether the driver has LaunchEarly's entry point
// (cuLaunchKernelEx, CUDA 11.8); the device must also be of compute
// capability 9.0 or later for launches to overlap.
func (d *Driver) CanLaunchEarly() bool { return d.launchKernelEx.addr != 0 }

// launchConfig is CUlaunchConfig (cuda.h) with room for one attribute: a
// CUlaunchAttribute is a 4-byte id, 4 bytes of padding and a 64-byte value.
type launchConfig struct {
	grid, block [3]uint32
	shared      uint32
	_           uint32
	stream      uintptr
	attrs       uintptr
	numAttrs    uint32
	_           uint32
	attr        struct {
		id    uint32
		_     uint32
		value [64]byte
	}
}

// attrProgrammaticStreamSerialization is
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
const attrProgrammaticStreamSerialization = 6

// LaunchEarly is Launch for a kernel that, before it reads or writes
// anything the work before it on s touches, waits for that work itself
// (PTX griddepcontrol.wait, compute capability 9.0): the GPU may then start
// it while the kernel before it is still running (programmatic dependent
// launch), so that its blocks are resident and past their first loads of
// constants by the time they may go on. A kernel launched this way that
// does not wait races with its predecessor. Without cuLaunchKernelEx it is
// Launch.
func (d *Driver) LaunchEarly(f Function, grid, block Dim3, sharedBytes uint32, s Stream, args *Args) error {
	if !d.CanLaunchEarly() {
		return d.Launch(f, grid, block, sharedBytes, s, args)
	}
	grid, block = grid.orOne(), block.orOne()
	cfg := &launchConfig{
		grid:   [3]uint32{grid.X, grid.Y, grid.Z},
		block:  [3]uint32{block.X, block.Y, block.Z},
		shared: sharedBytes,
		stream: uintptr(s),
	}
	cfg.attr.id = attrProgrammaticStreamSerialization
	cfg.attr.value[0] = 1 // programmaticStreamSerializationAllowed, an int
	cfg.attrs, cfg.numAttrs = uintptr(unsafe.Pointer(&cfg.attr)), 1
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(cfg)
	params := args.pinned()
	defer args.unpin()
	return call(&d.launchKernelEx, uintptr(unsafe.Pointer(cfg)), uintptr(f), params, 0)
}

// orOne returns x with zero extents replaced by 1.
func (x Dim3) orOne() Dim3 {
	if x.X == 0 {
		x.X = 1
	}
	if x.Y == 0 {
		x.Y = 1
	}
	if x.Z == 0 {
		x.Z = 1
	}
	return x
}
