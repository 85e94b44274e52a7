package driver

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/tensorforge/forge/kernels/cuda/internal/dl"
)

// ErrNoDriver is wrapped by Load's error when libcuda.so.1 cannot be loaded
// or lacks an entry point this package needs. Its text starts the error:
// "libcuda.so.1 not found: tried ...".
var ErrNoDriver = errors.New("libcuda.so.1 not found")

// ErrNoDevice is wrapped by Load's error when the driver loads but cuInit
// fails or finds no device.
var ErrNoDevice = errors.New("no usable CUDA device")

// EnvLibrary names the environment variable that overrides where libcuda
// is loaded from (a path); when set, nothing else is tried.
const EnvLibrary = "FORGE_LIBCUDA"

// librarySpec is where Load looks for the driver: the loader's own search
// first, then the folders NVIDIA's container runtime (/usr/local/nvidia)
// and distributions (multiarch, lib64, WSL) put libcuda.so.1 without always
// telling the loader. The toolkit's stubs folder is left out on purpose:
// its libcuda.so only returns CUDA_ERROR_STUB_LIBRARY.
func librarySpec() dl.Spec {
	triplet := "x86_64-linux-gnu"
	if runtime.GOARCH == "arm64" {
		triplet = "aarch64-linux-gnu"
	}
	return dl.Spec{
		Env:   EnvLibrary,
		Names: []string{"libcuda.so.1"},
		Dirs:  []string{"/usr/local/nvidia/lib64", "/usr/lib/" + triplet, "/usr/lib64", "/usr/lib/wsl/lib"},
	}
}

// proc is one bound driver entry point.
type proc struct {
	addr uintptr
	name string // the symbol bound, for errors
	d    *Driver
}

// Driver is the loaded CUDA driver API. Its methods are thin wrappers of
// the cu* functions of the same name; see the package documentation for
// the thread each must be called on.
type Driver struct {
	// Path is the file libcuda was loaded from.
	Path    string
	version int

	init, driverGetVersion                                            proc
	deviceGet, deviceGetCount, deviceGetName, deviceGetAttribute      proc
	deviceTotalMem                                                    proc
	primaryCtxRetain, primaryCtxRelease                               proc
	ctxSetCurrent, ctxGetCurrent, ctxSynchronize                      proc
	memAlloc, memFree, memAllocHost, memFreeHost, memGetInfo          proc
	memcpyHtoDAsync, memcpyDtoHAsync, memcpyDtoDAsync, memsetD8Async  proc
	streamCreate, streamDestroy, streamSynchronize, streamQuery       proc
	streamWaitEvent                                                   proc
	eventCreate, eventRecord, eventSynchronize, eventQuery            proc
	eventElapsedTime, eventDestroy                                    proc
	moduleLoadData, moduleGetFunction, moduleUnload, funcSetAttribute proc
	launchKernel, occupancyMaxActiveBlocks                            proc
	launchKernelEx                                                    proc // optional: CUDA 11.8 and later
	streamBeginCapture, streamEndCapture                              proc
	graphInstantiate, graphLaunch, graphExecDestroy, graphDestroy     proc
	getErrorName, getErrorString                                      proc
}

// symbols lists every entry point with the exported names to try, newest
// first. The names are what cuda.h's #defines resolve to (CUDA 11.8 header:
// cuMemAlloc → cuMemAlloc_v2, cuStreamDestroy → cuStreamDestroy_v2,
// cuStreamBeginCapture → cuStreamBeginCapture_v2, cuDevicePrimaryCtxRelease
// → cuDevicePrimaryCtxRelease_v2, ...) without CUDA_API_PER_THREAD_DEFAULT_STREAM,
// so stream 0 is the legacy default stream. cuEventElapsedTime_v2 is newer
// (CUDA 12.8) with the same signature; a 535 driver exports only the
// unversioned one. cuGraphInstantiateWithFlags is bound by name because
// the cuGraphInstantiate macro changed signature between CUDA 11 and 12.
func (d *Driver) symbols() []struct {
	p     *proc
	names []string
} {
	type s = struct {
		p     *proc
		names []string
	}
	return []s{
		{&d.init, []string{"cuInit"}},
		{&d.driverGetVersion, []string{"cuDriverGetVersion"}},
		{&d.deviceGet, []string{"cuDeviceGet"}},
		{&d.deviceGetCount, []string{"cuDeviceGetCount"}},
		{&d.deviceGetName, []string{"cuDeviceGetName"}},
		{&d.deviceGetAttribute, []string{"cuDeviceGetAttribute"}},
		{&d.deviceTotalMem, []string{"cuDeviceTotalMem_v2"}},
		{&d.primaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}},
		{&d.primaryCtxRelease, []string{"cuDevicePrimaryCtxRelease_v2"}},
		{&d.ctxSetCurrent, []string{"cuCtxSetCurrent"}},
		{&d.ctxGetCurrent, []string{"cuCtxGetCurrent"}},
		{&d.ctxSynchronize, []string{"cuCtxSynchronize"}},
		{&d.memAlloc, []string{"cuMemAlloc_v2"}},
		{&d.memFree, []string{"cuMemFree_v2"}},
		{&d.memAllocHost, []string{"cuMemAllocHost_v2"}},
		{&d.memFreeHost, []string{"cuMemFreeHost"}},
		{&d.memGetInfo, []string{"cuMemGetInfo_v2"}},
		{&d.memcpyHtoDAsync, []string{"cuMemcpyHtoDAsync_v2"}},
		{&d.memcpyDtoHAsync, []string{"cuMemcpyDtoHAsync_v2"}},
		{&d.memcpyDtoDAsync, []string{"cuMemcpyDtoDAsync_v2"}},
		{&d.memsetD8Async, []string{"cuMemsetD8Async"}},
		{&d.streamCreate, []string{"cuStreamCreate"}},
		{&d.streamDestroy, []string{"cuStreamDestroy_v2"}},
		{&d.streamSynchronize, []string{"cuStreamSynchronize"}},
		{&d.streamQuery, []string{"cuStreamQuery"}},
		{&d.streamWaitEvent, []string{"cuStreamWaitEvent"}},
		{&d.eventCreate, []string{"cuEventCreate"}},
		{&d.eventRecord, []string{"cuEventRecord"}},
		{&d.eventSynchronize, []string{"cuEventSynchronize"}},
		{&d.eventQuery, []string{"cuEventQuery"}},
		{&d.eventElapsedTime, []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
		{&d.eventDestroy, []string{"cuEventDestroy_v2"}},
		{&d.moduleLoadData, []string{"cuModuleLoadData"}},
		{&d.moduleGetFunction, []string{"cuModuleGetFunction"}},
		{&d.moduleUnload, []string{"cuModuleUnload"}},
		{&d.funcSetAttribute, []string{"cuFuncSetAttribute"}},
		{&d.launchKernel, []string{"cuLaunchKernel"}},
		{&d.occupancyMaxActiveBlocks, []string{"cuOccupancyMaxActiveBlocksPerMultiprocessor"}},
		{&d.streamBeginCapture, []string{"cuStreamBeginCapture_v2"}},
		{&d.streamEndCapture, []string{"cuStreamEndCapture"}},
		{&d.graphInstantiate, []string{"cuGraphInstantiateWithFlags"}},
		{&d.graphLaunch, []string{"cuGraphLaunch"}},
		{&d.graphExecDestroy, []string{"cuGraphExecDestroy"}},
		{&d.graphDestroy, []string{"cuGraphDestroy"}},
		{&d.getErrorName, []string{"cuGetErrorName"}},
		{&d.getErrorString, []string{"cuGetErrorString"}},
	}
}

// process is the driver as loaded by Load: a documented process-wide device
// handle (the library, once initialised, serves the whole process).
var process struct {
	once sync.Once
	d    *Driver
	err  error
}

// Load opens libcuda.so.1 (see EnvLibrary and librarySpec for where),
// binds the entry points and calls cuInit. It runs once per process; later
// calls return the first result, so it is cheap to call as a backend's
// availability probe. Its errors wrap ErrNoDriver or ErrNoDevice and are
// meant to be shown to users as the reason the CUDA backend is unavailable.
func Load() (*Driver, error) {
	process.once.Do(func() { process.d, process.err = load(librarySpec()) })
	return process.d, process.err
}

// load opens and initialises the driver found by spec.
func load(spec dl.Spec) (*Driver, error) {
	lib, err := dl.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	d := &Driver{Path: lib.Path}
	if addr, name, err := lib.Sym("cuLaunchKernelEx"); err == nil {
		d.launchKernelEx = proc{addr: addr, name: name, d: d}
	}
	for _, s := range d.symbols() {
		addr, name, err := lib.Sym(s.names...)
		if err != nil {
			return nil, fmt.Errorf("%w: usable driver: %w (the driver is older than this package supports)", ErrNoDriver, err)
		}
		*s.p = proc{addr: addr, name: name, d: d}
	}
	if err := call(&d.init, 0); err != nil {
		return nil, fmt.Errorf("%w (driver %s): %w", ErrNoDevice, d.Path, err)
	}
	var v, n int32
	if err := call(&d.driverGetVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return nil, fmt.Errorf("%w (driver %s): %w", ErrNoDevice, d.Path, err)
	}
	d.version = int(v)
	if err := call(&d.deviceGetCount, uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, fmt.Errorf("%w (driver %s): %w", ErrNoDevice, d.Path, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w (driver %s): cuDeviceGetCount found none", ErrNoDevice, d.Path)
	}
	return d, nil
}

// call runs one driver entry point and turns a failed CUresult into an
// *Error. Pointers converted to uintptr in its argument list stay valid
// (and are moved to the heap) for the duration of the call, as for
// purego.SyscallN, which it passes them to.
//
//go:uintptrescapes
func call(p *proc, args ...uintptr) error {
	r, _, _ := purego.SyscallN(p.addr, args...)
	// CUresult is a 32-bit enum returned in eax/w0: the upper half of the
	// register is not part of it.
	if res := Result(int32(uint32(r))); res != Success {
		return p.d.newError(p.name, res)
	}
	return nil
}

// newError builds the error for a failed call, with the driver's own name
// and description of the code.
func (d *Driver) newError(callName string, r Result) *Error {
	e := &Error{Call: callName, Code: r, Name: d.errorText(&d.getErrorName, r)}
	if e.Name == "" {
		e.Name = r.Name()
	}
	e.Msg = d.errorText(&d.getErrorString, r)
	return e
}

// errorText calls cuGetErrorName or cuGetErrorString; "" when the driver
// does not know the code.
func (d *Driver) errorText(p *proc, r Result) string {
	if p.addr == 0 {
		return ""
	}
	var s *byte // a static C string owned by the driver
	res, _, _ := purego.SyscallN(p.addr, uintptr(r), uintptr(unsafe.Pointer(&s)))
	if int32(uint32(res)) != int32(Success) {
		return ""
	}
	return goString(s)
}

// Version returns the CUDA version the driver supports, as
// cuDriverGetVersion encodes it (1000·major + 10·minor: 13000 is 13.0).
func (d *Driver) Version() int { return d.version }

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
