package driver

import (
	"fmt"
	"unsafe"
)

// Handles of driver objects. They are opaque C pointers (or, for Device,
// an ordinal handle), never Go pointers; the zero value is "none" (for
// Stream: the legacy default stream).
type (
	// Device is a CUdevice.
	Device int32
	// Context is a CUcontext.
	Context uintptr
	// Stream is a CUstream.
	Stream uintptr
	// Event is a CUevent.
	Event uintptr
	// Module is a CUmodule.
	Module uintptr
	// Function is a CUfunction.
	Function uintptr
	// Graph is a CUgraph.
	Graph uintptr
	// GraphExec is a CUgraphExec.
	GraphExec uintptr
	// DevicePtr is a CUdeviceptr: an address in the device's memory.
	DevicePtr uint64
)

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

// Device attributes (cuda.h, enum CUdevice_attribute_enum; CUDA 11.8 header,
// same values in cudarc v0.18.1's CUDA 13.0 bindings).
const (
	AttrMaxThreadsPerBlock             DeviceAttribute = 1  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	AttrWarpSize                       DeviceAttribute = 10 // CU_DEVICE_ATTRIBUTE_WARP_SIZE
	AttrMultiprocessorCount            DeviceAttribute = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrL2CacheSize                    DeviceAttribute = 38 // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
	AttrComputeCapabilityMajor         DeviceAttribute = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor         DeviceAttribute = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrMaxSharedMemoryPerBlockOptin   DeviceAttribute = 97 // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	AttrMaxSharedMemoryPerMultiprocess DeviceAttribute = 81 // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
)

// StreamFlags are cuStreamCreate's flags (cuda.h, CUstream_flags).
type StreamFlags uint32

// Stream flags.
const (
	StreamDefault     StreamFlags = 0 // CU_STREAM_DEFAULT: synchronises with the legacy default stream
	StreamNonBlocking StreamFlags = 1 // CU_STREAM_NON_BLOCKING: does not; what a backend wants
)

// EventFlags are cuEventCreate's flags (cuda.h, CUevent_flags).
type EventFlags uint32

// Event flags.
const (
	EventDefault       EventFlags = 0 // CU_EVENT_DEFAULT
	EventBlockingSync  EventFlags = 1 // CU_EVENT_BLOCKING_SYNC: waiting sleeps instead of spinning
	EventDisableTiming EventFlags = 2 // CU_EVENT_DISABLE_TIMING: cheaper, for ordering only
)

// CaptureMode is a CUstreamCaptureMode (cuda.h).
type CaptureMode int32

// Capture modes.
const (
	// CaptureGlobal forbids potentially unsafe calls (cuMemAlloc, sync
	// calls) from any thread while a global-mode capture is under way.
	CaptureGlobal CaptureMode = 0 // CU_STREAM_CAPTURE_MODE_GLOBAL
	// CaptureThreadLocal forbids them only on the capturing thread.
	CaptureThreadLocal CaptureMode = 1 // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
	// CaptureRelaxed forbids nothing.
	CaptureRelaxed CaptureMode = 2 // CU_STREAM_CAPTURE_MODE_RELAXED
)

// GraphInstantiateFlags are cuGraphInstantiateWithFlags's flags (cuda.h,
// CUgraphInstantiate_flags).
type GraphInstantiateFlags uint64

// Graph instantiation flags.
const (
	GraphAutoFreeOnLaunch GraphInstantiateFlags = 1 // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
	GraphUpload           GraphInstantiateFlags = 2 // CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD (CUDA 12)
)

// FuncAttribute is a CUfunction_attribute (cuda.h).
type FuncAttribute int32

// Function attributes.
const (
	// FuncMaxDynamicSharedBytes raises a kernel's dynamic shared memory
	// limit above the default 48 KiB (up to AttrMaxSharedMemoryPerBlockOptin).
	FuncMaxDynamicSharedBytes FuncAttribute = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
)

// Dim3 is a launch's grid or block extent.
type Dim3 struct{ X, Y, Z uint32 }

// DeviceCount returns how many devices the driver sees.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	err := call(&d.deviceGetCount, uintptr(unsafe.Pointer(&n)))
	return int(n), err
}

// DeviceGet returns the device with the given ordinal.
func (d *Driver) DeviceGet(ordinal int) (Device, error) {
	var dev Device
	err := call(&d.deviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal))
	return dev, err
}

// DeviceName returns the device's marketing name ("NVIDIA H100 80GB HBM3").
func (d *Driver) DeviceName(dev Device) (string, error) {
	buf := make([]byte, 256)
	if err := call(&d.deviceGetName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(dev)); err != nil {
		return "", err
	}
	return goString(&buf[0]), nil
}

// DeviceAttribute returns one attribute of dev.
func (d *Driver) DeviceAttribute(attr DeviceAttribute, dev Device) (int, error) {
	var v int32
	err := call(&d.deviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(dev))
	return int(v), err
}

// DeviceTotalMem returns the device's memory size in bytes.
func (d *Driver) DeviceTotalMem(dev Device) (uint64, error) {
	var n uint64
	err := call(&d.deviceTotalMem, uintptr(unsafe.Pointer(&n)), uintptr(dev))
	return n, err
}

// DeviceInfo is what a backend reports about its device and sizes its
// kernels by.
type DeviceInfo struct {
	Ordinal            int
	Name               string
	Major, Minor       int    // compute capability
	SMs                int    // multiprocessors
	TotalMem           uint64 // bytes
	MaxThreadsPerBlock int
	WarpSize           int
	SharedPerBlockOpt  int // bytes of shared memory a block may opt in to
	L2Bytes            int
}

// Arch is the NVRTC/ptxas architecture name, "sm_90" for 9.0.
func (i DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", i.Major, i.Minor) }

// String describes the device for scorecards: "NVIDIA H100 80GB HBM3
// (sm_90, 132 SMs, 79.6 GiB)".
func (i DeviceInfo) String() string {
	return fmt.Sprintf("%s (%s, %d SMs, %.1f GiB)", i.Name, i.Arch(), i.SMs, float64(i.TotalMem)/(1<<30))
}

// Info gathers DeviceInfo for the device with the given ordinal. It needs
// no context.
func (d *Driver) Info(ordinal int) (DeviceInfo, error) {
	dev, err := d.DeviceGet(ordinal)
	if err != nil {
		return DeviceInfo{}, err
	}
	info := DeviceInfo{Ordinal: ordinal}
	if info.Name, err = d.DeviceName(dev); err != nil {
		return DeviceInfo{}, err
	}
	if info.TotalMem, err = d.DeviceTotalMem(dev); err != nil {
		return DeviceInfo{}, err
	}
	for _, a := range []struct {
		attr DeviceAttribute
		dst  *int
	}{
		{AttrComputeCapabilityMajor, &info.Major},
		{AttrComputeCapabilityMinor, &info.Minor},
		{AttrMultiprocessorCount, &info.SMs},
		{AttrMaxThreadsPerBlock, &info.MaxThreadsPerBlock},
		{AttrWarpSize, &info.WarpSize},
		{AttrMaxSharedMemoryPerBlockOptin, &info.SharedPerBlockOpt},
		{AttrL2CacheSize, &info.L2Bytes},
	} {
		if *a.dst, err = d.DeviceAttribute(a.attr, dev); err != nil {
			return DeviceInfo{}, err
		}
	}
	return info, nil
}

// PrimaryCtxRetain retains (creating on first use) the device's primary
// context, the one the CUDA runtime and so cuBLASLt also use.
func (d *Driver) PrimaryCtxRetain(dev Device) (Context, error) {
	var c Context
	err := call(&d.primaryCtxRetain, uintptr(unsafe.Pointer(&c)), uintptr(dev))
	return c, err
}

// PrimaryCtxRelease releases one retain of the device's primary context.
func (d *Driver) PrimaryCtxRelease(dev Device) error {
	return call(&d.primaryCtxRelease, uintptr(dev))
}

// CtxSetCurrent binds c to the calling OS thread (0 unbinds).
func (d *Driver) CtxSetCurrent(c Context) error { return call(&d.ctxSetCurrent, uintptr(c)) }

// CtxGetCurrent returns the context bound to the calling OS thread.
func (d *Driver) CtxGetCurrent() (Context, error) {
	var c Context
	err := call(&d.ctxGetCurrent, uintptr(unsafe.Pointer(&c)))
	return c, err
}

// CtxSynchronize waits for all work in the current context.
func (d *Driver) CtxSynchronize() error { return call(&d.ctxSynchronize) }

// MemAlloc allocates n bytes of device memory (aligned to at least 256
// bytes).
func (d *Driver) MemAlloc(n int) (DevicePtr, error) {
	var p DevicePtr
	err := call(&d.memAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n))
	return p, err
}

// MemFree frees device memory from MemAlloc.
func (d *Driver) MemFree(p DevicePtr) error { return call(&d.memFree, uintptr(p)) }

// MemAllocHost allocates n bytes of page-locked host memory, which async
// copies read and write without staging. The slice is C memory: it is not
// garbage collected, must be freed with MemFreeHost, and must not be used
// after that.
func (d *Driver) MemAllocHost(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuMemAllocHost_v2: size %d", n)
	}
	var p unsafe.Pointer // set to C memory by the driver
	if err := call(&d.memAllocHost, uintptr(unsafe.Pointer(&p)), uintptr(n)); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// MemFreeHost frees memory from MemAllocHost.
func (d *Driver) MemFreeHost(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return call(&d.memFreeHost, uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// MemGetInfo returns the free and total device memory of the current
// context's device.
func (d *Driver) MemGetInfo() (free, total uint64, err error) {
	err = call(&d.memGetInfo, uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
	return free, total, err
}

// MemcpyHtoDAsync copies src to dst in stream order. From Go (pageable)
// memory the driver stages the bytes before returning, so src may be
// reused at once; from MemAllocHost memory the copy is truly asynchronous
// and src must stay unchanged until the stream has passed it. Stream
// capture accepts only page-locked sources.
func (d *Driver) MemcpyHtoDAsync(dst DevicePtr, src []byte, s Stream) error {
	if len(src) == 0 {
		return nil
	}
	return call(&d.memcpyHtoDAsync, uintptr(dst), uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(len(src)), uintptr(s))
}

// MemcpyDtoHAsync copies from src into dst in stream order. Into Go
// (pageable) memory it returns only when the copy is done; into
// MemAllocHost memory it returns at once and dst holds the bytes only
// after the stream is synchronised.
func (d *Driver) MemcpyDtoHAsync(dst []byte, src DevicePtr, s Stream) error {
	if len(dst) == 0 {
		return nil
	}
	return call(&d.memcpyDtoHAsync, uintptr(unsafe.Pointer(unsafe.SliceData(dst))), uintptr(src), uintptr(len(dst)), uintptr(s))
}

// MemcpyDtoDAsync copies n bytes between device addresses in stream order.
func (d *Driver) MemcpyDtoDAsync(dst, src DevicePtr, n int, s Stream) error {
	if n == 0 {
		return nil
	}
	return call(&d.memcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(n), uintptr(s))
}

// MemsetD8Async sets n bytes at dst to v in stream order.
func (d *Driver) MemsetD8Async(dst DevicePtr, v byte, n int, s Stream) error {
	if n == 0 {
		return nil
	}
	return call(&d.memsetD8Async, uintptr(dst), uintptr(v), uintptr(n), uintptr(s))
}

// StreamCreate creates a stream in the current context.
func (d *Driver) StreamCreate(flags StreamFlags) (Stream, error) {
	var s Stream
	err := call(&d.streamCreate, uintptr(unsafe.Pointer(&s)), uintptr(flags))
	return s, err
}

// StreamDestroy destroys s once its work is done (it does not wait).
func (d *Driver) StreamDestroy(s Stream) error { return call(&d.streamDestroy, uintptr(s)) }

// StreamSynchronize waits until the work enqueued on s has finished.
func (d *Driver) StreamSynchronize(s Stream) error { return call(&d.streamSynchronize, uintptr(s)) }

// StreamQuery reports whether the work enqueued on s has finished, without
// waiting.
func (d *Driver) StreamQuery(s Stream) (bool, error) {
	return ready(call(&d.streamQuery, uintptr(s)))
}

// StreamWaitEvent makes later work on s wait for the last record of e.
func (d *Driver) StreamWaitEvent(s Stream, e Event) error {
	return call(&d.streamWaitEvent, uintptr(s), uintptr(e), 0)
}

// EventCreate creates an event in the current context.
func (d *Driver) EventCreate(flags EventFlags) (Event, error) {
	var e Event
	err := call(&d.eventCreate, uintptr(unsafe.Pointer(&e)), uintptr(flags))
	return e, err
}

// EventRecord records e at the current end of s.
func (d *Driver) EventRecord(e Event, s Stream) error {
	return call(&d.eventRecord, uintptr(e), uintptr(s))
}

// EventSynchronize waits until the work before e's last record has
// finished.
func (d *Driver) EventSynchronize(e Event) error { return call(&d.eventSynchronize, uintptr(e)) }

// EventQuery reports whether the work before e's last record has finished.
func (d *Driver) EventQuery(e Event) (bool, error) { return ready(call(&d.eventQuery, uintptr(e))) }

// EventElapsedTime returns the milliseconds between two recorded events
// (about 0.5 µs resolution); both must have been created with timing.
func (d *Driver) EventElapsedTime(start, end Event) (float32, error) {
	var ms float32
	err := call(&d.eventElapsedTime, uintptr(unsafe.Pointer(&ms)), uintptr(start), uintptr(end))
	return ms, err
}

// EventDestroy destroys e.
func (d *Driver) EventDestroy(e Event) error { return call(&d.eventDestroy, uintptr(e)) }

// ready maps CUDA_ERROR_NOT_READY to (false, nil) for the query calls.
func ready(err error) (bool, error) {
	if e, ok := err.(*Error); ok && e.Code == ErrorNotReady {
		return false, nil
	}
	return err == nil, err
}

// ModuleLoadData loads a module from PTX text, a cubin or a fatbin into
// the current context (PTX is compiled for the device by the driver's
// JIT). PTX needs no trailing NUL: the image is copied with one appended.
func (d *Driver) ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("cuModuleLoadData: empty image")
	}
	buf := make([]byte, len(image)+1)
	copy(buf, image)
	var m Module
	err := call(&d.moduleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&buf[0])))
	return m, err
}

// ModuleGetFunction returns the kernel named name (its extern "C" or
// mangled name) in m.
func (d *Driver) ModuleGetFunction(m Module, name string) (Function, error) {
	cname := append([]byte(name), 0)
	var f Function
	if err := call(&d.moduleGetFunction, uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(&cname[0]))); err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// ModuleUnload unloads m; its functions must no longer be launched.
func (d *Driver) ModuleUnload(m Module) error { return call(&d.moduleUnload, uintptr(m)) }

// FuncSetAttribute sets an attribute of a kernel.
func (d *Driver) FuncSetAttribute(f Function, attr FuncAttribute, value int) error {
	return call(&d.funcSetAttribute, uintptr(f), uintptr(attr), uintptr(value))
}

// OccupancyMaxActiveBlocks returns how many blocks of f, of blockSize
// threads and sharedBytes of dynamic shared memory each, one multiprocessor
// runs at once: a grid of that many per multiprocessor is the largest that
// runs in one wave.
func (d *Driver) OccupancyMaxActiveBlocks(f Function, blockSize, sharedBytes int) (int, error) {
	var n int32
	err := call(&d.occupancyMaxActiveBlocks, uintptr(unsafe.Pointer(&n)), uintptr(f), uintptr(blockSize), uintptr(sharedBytes))
	return int(n), err
}

// StreamBeginCapture starts recording the work enqueued on s into a graph
// instead of running it.
func (d *Driver) StreamBeginCapture(s Stream, mode CaptureMode) error {
	return call(&d.streamBeginCapture, uintptr(s), uintptr(mode))
}

// StreamEndCapture ends the capture on s and returns the recorded graph.
func (d *Driver) StreamEndCapture(s Stream) (Graph, error) {
	var g Graph
	err := call(&d.streamEndCapture, uintptr(s), uintptr(unsafe.Pointer(&g)))
	return g, err
}

// GraphInstantiate makes an executable graph from g; g may be destroyed
// afterwards.
func (d *Driver) GraphInstantiate(g Graph, flags GraphInstantiateFlags) (GraphExec, error) {
	var e GraphExec
	err := call(&d.graphInstantiate, uintptr(unsafe.Pointer(&e)), uintptr(g), uintptr(flags))
	return e, err
}

// GraphLaunch enqueues one replay of e on s.
func (d *Driver) GraphLaunch(e GraphExec, s Stream) error {
	return call(&d.graphLaunch, uintptr(e), uintptr(s))
}

// GraphExecDestroy destroys an executable graph.
func (d *Driver) GraphExecDestroy(e GraphExec) error { return call(&d.graphExecDestroy, uintptr(e)) }

// GraphDestroy destroys a graph.
func (d *Driver) GraphDestroy(g Graph) error { return call(&d.graphDestroy, uintptr(g)) }

// ErrorName returns the driver's name for r ("CUDA_ERROR_OUT_OF_MEMORY").
func (d *Driver) ErrorName(r Result) string {
	if s := d.errorText(&d.getErrorName, r); s != "" {
		return s
	}
	return r.Name()
}
