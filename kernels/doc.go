// Package kernels is the seam between the tensor graph and the machines that
// run it.
//
// It holds what every backend shares: element types ([DType]), strided
// operand descriptions ([View]), the kernel-level instruction set ([Op] with
// its attribute structs), the fused elementwise expression IR ([Expr]) that
// CPU, CUDA and Metal backends all execute, and the [Backend] interface.
//
// The interface is shaped for asynchronous devices: buffers are owned by the
// backend, [Backend.Launch] may only enqueue work, and host code sees results
// only through [Backend.Read], which waits for everything enqueued before it.
// Nothing here assumes device memory is host memory; the CPU backend merely
// happens to make that cheap.
//
// Implementations live in sub-packages (kernels/cpu, kernels/metal, ...);
// package graph compiles to Steps and never imports an implementation.
package kernels
