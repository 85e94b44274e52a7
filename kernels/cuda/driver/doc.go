// Package driver binds the CUDA driver API (libcuda.so.1) through purego,
// without cgo: loading, devices, the primary context, memory (device and
// page-locked host), async copies and memset, streams, events, modules
// (PTX, cubin, fatbin), kernel launches, stream capture and CUDA graphs.
//
// # Loading
//
// Load opens the driver once per process: $FORGE_LIBCUDA if set (alone),
// else libcuda.so.1 through the dynamic loader, else the same file in
// /usr/local/nvidia/lib64, /usr/lib/<multiarch>, /usr/lib64 and
// /usr/lib/wsl/lib. It binds every entry point by the symbol cuda.h's
// macros resolve to (cuMemAlloc_v2, cuStreamDestroy_v2, ...; see
// Driver.symbols), calls cuInit and counts devices. Without a driver its
// error wraps ErrNoDriver and reads "libcuda.so.1 not found: tried ...";
// with a driver but no usable device it wraps ErrNoDevice and carries the
// cuInit error. A backend shows either as the reason it is unavailable.
//
// # Threads
//
// The driver keeps the current context per OS thread, and Go moves
// goroutines between OS threads at will. Every call that works in a
// context (all but Load, the Device* queries, Info and the
// PrimaryCtx* calls) must therefore run on a goroutine that has called
// runtime.LockOSThread and made the context current. Thread is that
// goroutine: NewThread locks a new goroutine to its thread, retains the
// device's primary context (the one cuBLASLt and the CUDA runtime use) and
// makes it current; Do and DoAll run funcs there in submission order.
// A hop costs a goroutine hand-off and the wake-up of the locked OS thread
// (about 12 µs measured on the 2-core development machine, allocation
// free; BenchmarkThreadHop), so a backend submits work in batches: one
// func that enqueues many launches, or DoAll.
//
// # Memory passed to C
//
// Handles are C pointers held as integers, never Go pointers. Go memory
// handed to a call (a copy's host slice, a kernel name) is converted to
// uintptr in the argument list of a //go:uintptrescapes function, which
// keeps it alive and in place for the call, as purego.SyscallN does.
// Kernel arguments are an array of pointers to values (cuLaunchKernel's
// kernelParams): Args keeps both in Go memory and pins them with a
// runtime.Pinner for the duration of Launch.
//
// # Verified where
//
// On the development machine (no GPU): PTX of the smoke test assembles
// with ptxas 11.8 for sm_90; the Debian 535 driver library (CUDA 12.2)
// loads, binds every symbol (cuEventElapsedTime through its unversioned
// fallback, as that driver lacks the _v2) and fails cuInit with
// CUDA_ERROR_NO_DEVICE, named through cuGetErrorName/String; enum values
// are checked against the CUDA 11.8 cuda.h and cudarc v0.18.1's bindings of
// CUDA 13.0. The tests named TestGPU* (memcpy round trips, kernel launches
// from PTX, a captured graph replayed, driver errors) run on the GPU
// machine from a test binary built here; they skip without a driver.
package driver
