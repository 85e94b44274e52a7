// Package kernels is the seam between the tensor graph and the machines that
// run it.
//
// It holds what every backend shares: element types ([DType]), strided
// operand descriptions ([View]), the kernel-level instruction set ([Op] with
// its attribute structs), the fused elementwise expression IR ([Expr]) that
// CPU, CUDA and Metal backends all execute, the [Backend] and [Queue]
// interfaces with their optional capabilities, and the registry that
// [Open] reads. Package graph compiles to [Step]s and never imports an
// implementation.
//
// # Memory and queues
//
// A [Backend] owns one device's memory: [Backend.Alloc], [Backend.Wrap] (a
// constant from host memory, uploaded once on a device) and [Backend.Free].
// Work runs on a [Queue] (a stream): writes, launches and reads on one queue
// take effect in order, [Queue.Launch] may return before the step runs, and
// [Queue.Read] waits for that queue only. A VAD reading one float therefore
// never waits behind an encoder window that runs on another queue.
//
// # Concurrency rules
//
//   - Backend methods are safe for concurrent use.
//   - A Queue is used by one goroutine at a time; different queues may be
//     used at once, and their work is unordered with respect to each other.
//   - A buffer written on one queue may be used on another only after the
//     first queue was waited for (a Read or Sync returned).
//   - graph.Engine gives every Program a queue of its own (pooled), so
//     programs of one engine run concurrently; a Program's outputs are read
//     through its queue; Program.Close and Engine.Eval wait for their queue,
//     so state written by one program is visible to the next.
//
// # Optional capabilities
//
// Found by type assertion, as io does with WriterTo:
//
//   - [Supporter]: which steps the backend runs. The graph compiler lowers
//     softmax, layer norm and group norm into OpReduce + OpFused steps when
//     the backend lacks them but runs those, and partitions what is left into
//     device runs and host runs (on the "cpu" backend), inserting the copies:
//     before a host run, the byte ranges it reads (and the gaps around what it
//     writes partially); after it, the ranges it wrote. A backend that
//     supports only OpFused and OpMatMul runs every model from its first day.
//   - [HostMapper] (with a host backend that is an [Aliaser]): the device's
//     memory is the host's (Apple silicon). Host runs then work on the
//     device's buffers in place; the copies become a wait for the queue.
//   - [Planner]: the backend receives each compiled run of steps once and
//     returns a [Plan] that the engine runs instead of launching steps one
//     by one — the hook for recording a CUDA graph or a pre-encoded Metal
//     command buffer. Programs reuse their buffer table on every run, so a
//     plan may record once per table and replay.
//
// # Adding a backend
//
//  1. Implement Backend and Queue in kernels/NAME; call [Register] from an
//     init function with a Probe that says why the backend cannot run here
//     (no driver, wrong OS), and add the package to kernels/backends.
//  2. Start with OpFused (generate code from [Expr]; kernels/codegen prints
//     it as CUDA C or MSL), OpReduce and OpMatMul, and answer [Supporter]
//     truthfully: every model then runs, the rest on the host.
//  3. Run the conformance kit (kernels/kerneltest) from the backend's tests:
//     every op and random fused expressions against kernels/cpu.
//  4. Grow op coverage until no model step falls back, then add [Planner].
//
// # Fixed kernels
//
// Everything elementwise is OpFused, and the normalisations are expressible
// as reductions plus fused steps. The ops that remain fixed do so because
// they have a data-dependent or blocked access pattern that a per-element
// expression cannot describe: matrix products and attention (tiling, the
// score matrix kept on chip), convolutions (implicit GEMM), the LSTM (a
// sequential recurrence), gather, repeat-interleave, pad and cumsum (index
// arithmetic driven by data or by a scan), slice-update (writes at a
// position held in device memory), the integer ops of int8 models and
// reductions themselves. Softmax, layer norm and group norm stay as fixed
// kernels too for the backends that have them, because a single pass over
// the row is faster than the three the lowered form makes.
package kernels
