//go:build darwin

package mtl

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// Metal constants the bridge passes (values from the Metal headers; they
// are ABI and never change).
const (
	// resourceStorageModeShared is MTLResourceStorageModeShared (0 << 4)
	// with MTLResourceCPUCacheModeDefaultCache and hazard tracking by
	// default: memory both the CPU and the GPU address.
	resourceStorageModeShared = 0
	// mathModeSafe is MTLMathModeSafe: IEEE results, no fast-math
	// reassociation or NaN/infinity assumptions (macOS 15 and later).
	mathModeSafe = 0
)

// ID is an Objective-C object pointer.
type ID = objc.ID

// Size is MTLSize: three NSUIntegers, passed by value.
type Size struct{ W, H, D uint64 }

// api holds the loaded frameworks, the selector table and the typed
// entry points of objc_msgSend: a documented process-wide handle, loaded
// once by Load.
var api struct {
	once sync.Once
	err  error

	sel [numSelectors]objc.SEL

	createDevice func() ID
	poolPush     func() uintptr
	poolPop      func(uintptr)

	clsString, clsURL, clsArray, clsProcessInfo        objc.Class
	clsCompileOptions, clsPipelineDesc, clsArchiveDesc objc.Class
	msgID                                              func(ID, objc.SEL) ID
	msgIDID                                            func(ID, objc.SEL, ID) ID
	msgVoid                                            func(ID, objc.SEL)
	msgVoidID                                          func(ID, objc.SEL, ID)
	msgVoidBool                                        func(ID, objc.SEL, bool)
	msgVoidU64                                         func(ID, objc.SEL, uint64)
	msgU64                                             func(ID, objc.SEL) uint64
	msgI64                                             func(ID, objc.SEL) int64
	msgBool                                            func(ID, objc.SEL) bool
	msgBoolSel                                         func(ID, objc.SEL, objc.SEL) bool
	msgBoolU64                                         func(ID, objc.SEL, uint64) bool
	msgPtr                                             func(ID, objc.SEL) unsafe.Pointer
	msgStr                                             func(ID, objc.SEL) string
	msgCStr                                            func(ID, objc.SEL, *byte) ID
	msgNewBuffer                                       func(ID, objc.SEL, uint64, uint64) ID
	msgNoCopy                                          func(ID, objc.SEL, unsafe.Pointer, uint64, uint64, uintptr) ID
	msgLibrary                                         func(ID, objc.SEL, ID, ID, *ID) ID
	msgIDErr                                           func(ID, objc.SEL, ID, *ID) ID
	msgBoolIDErr                                       func(ID, objc.SEL, ID, *ID) bool
	msgPipelineDesc                                    func(ID, objc.SEL, ID, uint64, uintptr, *ID) ID
	msgSetBuffer                                       func(ID, objc.SEL, ID, uint64, uint64)
	msgSetBytes                                        func(ID, objc.SEL, unsafe.Pointer, uint64, uint64)
	msgDispatch                                        func(ID, objc.SEL, Size, Size)
}

// Load loads the Objective-C runtime, Foundation and Metal, and registers
// the selectors; the result is cached.
func Load() error {
	api.once.Do(func() { api.err = load() })
	return api.err
}

func load() error {
	if msg, ok := checkSelectors(); !ok {
		return errors.New("metal: selector table: " + msg)
	}
	libobjc, err := purego.Dlopen("/usr/lib/libobjc.A.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("metal: loading the Objective-C runtime: %w", err)
	}
	if _, err := purego.Dlopen("/System/Library/Frameworks/Foundation.framework/Foundation", purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		return fmt.Errorf("metal: loading Foundation: %w", err)
	}
	metal, err := purego.Dlopen("/System/Library/Frameworks/Metal.framework/Metal", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("metal: loading Metal.framework: %w", err)
	}
	send, err := purego.Dlsym(libobjc, "objc_msgSend")
	if err != nil {
		return fmt.Errorf("metal: %w", err)
	}
	for _, f := range []struct {
		fptr any
		lib  uintptr
		name string
	}{
		{&api.createDevice, metal, "MTLCreateSystemDefaultDevice"},
		{&api.poolPush, libobjc, "objc_autoreleasePoolPush"},
		{&api.poolPop, libobjc, "objc_autoreleasePoolPop"},
	} {
		sym, err := purego.Dlsym(f.lib, f.name)
		if err != nil {
			return fmt.Errorf("metal: %s: %w", f.name, err)
		}
		purego.RegisterFunc(f.fptr, sym)
	}
	for _, f := range []any{&api.msgID, &api.msgIDID, &api.msgVoid, &api.msgVoidID, &api.msgVoidBool, &api.msgVoidU64,
		&api.msgU64, &api.msgI64, &api.msgBool, &api.msgBoolSel, &api.msgBoolU64, &api.msgPtr, &api.msgStr, &api.msgCStr,
		&api.msgNewBuffer, &api.msgNoCopy, &api.msgLibrary, &api.msgIDErr, &api.msgBoolIDErr,
		&api.msgPipelineDesc, &api.msgSetBuffer, &api.msgSetBytes, &api.msgDispatch} {
		purego.RegisterFunc(f, send)
	}
	for i, s := range selectorTable {
		api.sel[i] = objc.RegisterName(s.name)
	}
	for _, c := range []struct {
		dst  *objc.Class
		name string
	}{
		{&api.clsString, "NSString"}, {&api.clsURL, "NSURL"}, {&api.clsArray, "NSArray"},
		{&api.clsProcessInfo, "NSProcessInfo"}, {&api.clsCompileOptions, "MTLCompileOptions"},
		{&api.clsPipelineDesc, "MTLComputePipelineDescriptor"}, {&api.clsArchiveDesc, "MTLBinaryArchiveDescriptor"},
	} {
		if *c.dst = objc.GetClass(c.name); *c.dst == 0 {
			return fmt.Errorf("metal: class %s not found", c.name)
		}
	}
	return nil
}

func sel(s selector) objc.SEL { return api.sel[s] }

// NewThread starts a locked thread whose batches run in autorelease pools.
func NewThread() (*Thread, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	return newThread(poolHooks{push: api.poolPush, pop: api.poolPop}), nil
}

// release drops a +1 reference (objects from new*, alloc, copy, retain).
func release(id ID) {
	if id != 0 {
		api.msgVoid(id, sel(selRelease))
	}
}

// nsString returns an autoreleased NSString of s.
func nsString(s string) ID {
	b := append([]byte(s), 0)
	return api.msgCStr(ID(api.clsString), sel(selStringWithUTF8String), &b[0])
}

// goString copies an NSString (nil: "").
func goString(id ID) string {
	if id == 0 {
		return ""
	}
	return api.msgStr(id, sel(selUTF8String))
}

// decodeError reads an NSError (nil when id is nil).
func decodeError(op string, id ID) *Error {
	if id == 0 {
		return nil
	}
	return &Error{
		Op:          op,
		Domain:      goString(api.msgID(id, sel(selDomain))),
		Code:        int(api.msgI64(id, sel(selCode))),
		Description: goString(api.msgID(id, sel(selLocalizedDescription))),
		Reason:      goString(api.msgID(id, sel(selLocalizedFailureReason))),
	}
}

// OSVersion is the operating system's version string, part of the
// binary archive's identity (a new OS brings a new GPU compiler).
func OSVersion() string {
	pi := api.msgID(ID(api.clsProcessInfo), sel(selProcessInfo))
	return goString(api.msgID(pi, sel(selOperatingSystemVersionString)))
}

// Device is an MTLDevice. Its methods must run on a Thread.
type Device struct{ id ID }

// DefaultDevice returns the system's default Metal device (on a thread).
func DefaultDevice() (*Device, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	id := api.createDevice()
	if id == 0 {
		return nil, errors.New("metal: no Metal device (MTLCreateSystemDefaultDevice returned nil)")
	}
	return &Device{id: id}, nil
}

// Release drops the device.
func (d *Device) Release() { release(d.id) }

// Name is the GPU's name ("Apple M2 Pro").
func (d *Device) Name() string { return goString(api.msgID(d.id, sel(selName))) }

// UnifiedMemory reports whether the CPU and GPU share memory.
func (d *Device) UnifiedMemory() bool { return api.msgBool(d.id, sel(selHasUnifiedMemory)) }

// FamilyApple7 is MTLGPUFamilyApple7 (M1, A14 and later): simdgroup
// matrix operations, which the hand-written matrix product uses.
const FamilyApple7 = 1007

// SupportsFamily reports whether the device belongs to a GPU family.
func (d *Device) SupportsFamily(f int) bool {
	return api.msgBoolU64(d.id, sel(selSupportsFamily), uint64(f))
}

// MaxBufferLength is the largest buffer the device allocates.
func (d *Device) MaxBufferLength() int { return int(api.msgU64(d.id, sel(selMaxBufferLength))) }

// Buffer is an MTLBuffer in shared storage (the CPU addresses it).
type Buffer struct{ id ID }

// NewBuffer allocates n bytes of shared storage.
func (d *Device) NewBuffer(n int) (Buffer, error) {
	id := api.msgNewBuffer(d.id, sel(selNewBufferWithLength), uint64(AllocLength(n)), resourceStorageModeShared)
	if id == 0 {
		return Buffer{}, fmt.Errorf("metal: newBufferWithLength %d: %w", n, ErrNil)
	}
	return Buffer{id}, nil
}

// NewBufferNoCopy wraps length bytes of host memory at p (page-aligned,
// a whole number of pages: see NoCopyRange) without copying; the caller
// keeps the memory mapped while the buffer lives.
func (d *Device) NewBufferNoCopy(p unsafe.Pointer, length int) (Buffer, error) {
	id := api.msgNoCopy(d.id, sel(selNewBufferWithBytesNoCopy), p, uint64(length), resourceStorageModeShared, 0)
	if id == 0 {
		return Buffer{}, fmt.Errorf("metal: newBufferWithBytesNoCopy of %d bytes: %w", length, ErrNil)
	}
	return Buffer{id}, nil
}

// Contents is the CPU address of the buffer's first byte.
func (b Buffer) Contents() unsafe.Pointer { return api.msgPtr(b.id, sel(selContents)) }

// Length is the buffer's size in bytes.
func (b Buffer) Length() int { return int(api.msgU64(b.id, sel(selLength))) }

// Release frees the buffer.
func (b Buffer) Release() { release(b.id) }

// Library is a compiled MTLLibrary.
type Library struct{ id ID }

// NewLibrary compiles MSL source with fast math off (MTLMathModeSafe where
// the OS has it, else fastMathEnabled = NO): the kernels test NaN with
// x != x and must round as IEEE says.
func (d *Device) NewLibrary(src string) (Library, error) {
	opts := api.msgID(ID(api.clsCompileOptions), sel(selNew))
	if opts == 0 {
		return Library{}, fmt.Errorf("metal: MTLCompileOptions: %w", ErrNil)
	}
	defer release(opts)
	if api.msgBoolSel(opts, sel(selRespondsToSelector), sel(selSetMathMode)) {
		api.msgVoidU64(opts, sel(selSetMathMode), mathModeSafe)
	} else {
		api.msgVoidBool(opts, sel(selSetFastMathEnabled), false)
	}
	var nsErr ID
	id := api.msgLibrary(d.id, sel(selNewLibraryWithSource), nsString(src), opts, &nsErr)
	if err := libraryResult(id != 0, decodeError("compiling a library", nsErr)); err != nil {
		return Library{}, err
	}
	return Library{id}, nil
}

// Release frees the library.
func (l Library) Release() { release(l.id) }

// Function is an MTLFunction of a library.
type Function struct{ id ID }

// Function looks a kernel up by name.
func (l Library) Function(name string) (Function, error) {
	id := api.msgIDID(l.id, sel(selNewFunctionWithName), nsString(name))
	if id == 0 {
		return Function{}, fmt.Errorf("metal: the library has no function %s: %w", name, ErrNil)
	}
	return Function{id}, nil
}

// Release frees the function.
func (f Function) Release() { release(f.id) }

// Pipeline is an MTLComputePipelineState.
type Pipeline struct{ id ID }

// MaxThreads is the largest threadgroup the pipeline runs.
func (p Pipeline) MaxThreads() int {
	return int(api.msgU64(p.id, sel(selMaxTotalThreadsPerThreadgroup)))
}

// Release frees the pipeline.
func (p Pipeline) Release() { release(p.id) }

// Archive is an MTLBinaryArchive: compiled pipelines kept on disk, so a
// second process skips the GPU compiler's back end.
type Archive struct{ id ID }

// NewArchive opens the archive at path (an empty one when the file does
// not exist yet). Binary archives exist from macOS 11; an error means the
// backend goes on without one.
func (d *Device) NewArchive(path string) (*Archive, error) {
	desc := api.msgID(ID(api.clsArchiveDesc), sel(selNew))
	if desc == 0 {
		return nil, fmt.Errorf("metal: MTLBinaryArchiveDescriptor: %w", ErrNil)
	}
	defer release(desc)
	if _, err := os.Stat(path); err == nil {
		api.msgVoidID(desc, sel(selSetURL), api.msgIDID(ID(api.clsURL), sel(selFileURLWithPath), nsString(path)))
	}
	var nsErr ID
	id := api.msgIDErr(d.id, sel(selNewBinaryArchiveWithDescriptor), desc, &nsErr)
	if id == 0 {
		if e := decodeError("opening binary archive "+path, nsErr); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("metal: opening binary archive %s: %w", path, ErrNil)
	}
	return &Archive{id}, nil
}

// Save writes the archive to path.
func (a *Archive) Save(path string) error {
	var nsErr ID
	url := api.msgIDID(ID(api.clsURL), sel(selFileURLWithPath), nsString(path))
	if !api.msgBoolIDErr(a.id, sel(selSerializeToURL), url, &nsErr) {
		if e := decodeError("saving binary archive "+path, nsErr); e != nil {
			return e
		}
		return fmt.Errorf("metal: saving binary archive %s failed", path)
	}
	return nil
}

// Release frees the archive.
func (a *Archive) Release() { release(a.id) }

// NewPipeline builds the compute pipeline of fn; with an archive, it is
// looked up there first and added to it after.
func (d *Device) NewPipeline(fn Function, ar *Archive) (Pipeline, error) {
	var nsErr ID
	if ar == nil {
		id := api.msgIDErr(d.id, sel(selNewComputePipelineStateWithFunction), fn.id, &nsErr)
		return pipelineResult(id, nsErr)
	}
	desc := api.msgID(ID(api.clsPipelineDesc), sel(selNew))
	if desc == 0 {
		return Pipeline{}, fmt.Errorf("metal: MTLComputePipelineDescriptor: %w", ErrNil)
	}
	defer release(desc)
	api.msgVoidID(desc, sel(selSetComputeFunction), fn.id)
	api.msgVoidID(desc, sel(selSetBinaryArchives), api.msgIDID(ID(api.clsArray), sel(selArrayWithObject), ar.id))
	id := api.msgPipelineDesc(d.id, sel(selNewComputePipelineStateWithDescriptor), desc, 0, 0, &nsErr)
	p, err := pipelineResult(id, nsErr)
	if err == nil {
		var addErr ID // a pipeline the archive cannot hold still runs
		api.msgBoolIDErr(ar.id, sel(selAddComputePipelineFunctions), desc, &addErr)
	}
	return p, err
}

func pipelineResult(id, nsErr ID) (Pipeline, error) {
	if id == 0 {
		if e := decodeError("building a compute pipeline", nsErr); e != nil {
			return Pipeline{}, e
		}
		return Pipeline{}, fmt.Errorf("metal: building a compute pipeline: %w", ErrNil)
	}
	return Pipeline{id}, nil
}

// Queue is an MTLCommandQueue.
type Queue struct{ id ID }

// NewQueue creates a command queue.
func (d *Device) NewQueue() (Queue, error) {
	id := api.msgID(d.id, sel(selNewCommandQueue))
	if id == 0 {
		return Queue{}, fmt.Errorf("metal: newCommandQueue: %w", ErrNil)
	}
	return Queue{id}, nil
}

// Release frees the queue.
func (q Queue) Release() { release(q.id) }

// CommandBuffer is an MTLCommandBuffer with its compute encoder, both
// retained so that they outlive the autorelease pool they were made in.
type CommandBuffer struct{ id, enc ID }

// CommandBuffer starts a command buffer with a serial compute encoder
// (dispatches run in order, each seeing the writes of those before).
func (q Queue) CommandBuffer() (CommandBuffer, error) {
	cb := api.msgID(q.id, sel(selCommandBuffer))
	if cb == 0 {
		return CommandBuffer{}, fmt.Errorf("metal: commandBuffer: %w", ErrNil)
	}
	enc := api.msgID(cb, sel(selComputeCommandEncoder))
	if enc == 0 {
		return CommandBuffer{}, fmt.Errorf("metal: computeCommandEncoder: %w", ErrNil)
	}
	api.msgID(cb, sel(selRetain))
	api.msgID(enc, sel(selRetain))
	return CommandBuffer{id: cb, enc: enc}, nil
}

// SetPipeline selects the kernel of the next dispatches.
func (c CommandBuffer) SetPipeline(p Pipeline) {
	api.msgVoidID(c.enc, sel(selSetComputePipelineState), p.id)
}

// SetBuffer binds b at byte offset off to buffer index i.
func (c CommandBuffer) SetBuffer(b Buffer, off, i int) {
	api.msgSetBuffer(c.enc, sel(selSetBufferOffsetAtIndex), b.id, uint64(off), uint64(i))
}

// SetBytes copies params (at most 4 KiB) into the command buffer as
// buffer index i.
func (c CommandBuffer) SetBytes(params []byte, i int) {
	if len(params) == 0 {
		params = make([]byte, 8)
	}
	api.msgSetBytes(c.enc, sel(selSetBytesLengthAtIndex), unsafe.Pointer(&params[0]), uint64(len(params)), uint64(i))
}

// DispatchThreads runs threads threads in groups of group (the last group
// may be partial).
func (c CommandBuffer) DispatchThreads(threads, group int) {
	api.msgDispatch(c.enc, sel(selDispatchThreads), Size{uint64(threads), 1, 1}, Size{uint64(group), 1, 1})
}

// DispatchThreadgroups runs groups whole threadgroups of group threads.
func (c CommandBuffer) DispatchThreadgroups(groups, group int) {
	api.msgDispatch(c.enc, sel(selDispatchThreadgroups), Size{uint64(groups), 1, 1}, Size{uint64(group), 1, 1})
}

// Commit ends encoding and submits the command buffer.
func (c CommandBuffer) Commit() {
	api.msgVoid(c.enc, sel(selEndEncoding))
	api.msgVoid(c.id, sel(selCommit))
}

// Wait blocks until the committed command buffer has run, returns its
// error (decoded from its NSError) and releases it.
func (c CommandBuffer) Wait() error {
	api.msgVoid(c.id, sel(selWaitUntilCompleted))
	status := int(api.msgU64(c.id, sel(selStatus)))
	var nsErr *Error
	if status == statusError {
		nsErr = decodeError("running a command buffer", api.msgID(c.id, sel(selError)))
	}
	release(c.enc)
	release(c.id)
	return statusResult(status, nsErr)
}
