// Package cuda is Forge's NVIDIA backend: kernels.Backend on one GPU through
// the CUDA driver API, NVRTC and cuBLASLt, all loaded at run time with
// purego (no cgo), so the package builds everywhere and registers itself as
// "cuda", unavailable with the reason where there is no driver or GPU.
//
// # Threading
//
// A CUDA context is current per OS thread. The backend owns one goroutine
// locked to its OS thread (driver.Thread) with the device's primary context
// current, and every driver and cuBLASLt call runs there. A hop to that
// thread costs tens of microseconds, so the backend batches: a queue's
// writes are staged in pinned memory without a hop and issued with the
// next launch, and a whole compiled program (a kernels.Plan) runs in one
// hop.
//
// # Memory
//
// Buffers are ranges of a few large cuMemAlloc slabs (arena.go), reused
// best-fit when freed; constants (kernels.Backend.Wrap) are uploaded once.
// Each queue is a non-blocking stream with pinned staging memory for reads
// and writes, a workspace for half-precision operand copies and cuBLASLt,
// and an error word that kernels set when data is bad (an index out of
// range, a position that does not fit); the next Read or Sync reports it.
//
// # Kernels
//
// Fused elementwise steps and reductions are generated from the graph's IR
// by kernels/codegen, compiled by NVRTC for the device's architecture and
// cached on disk ($FORGE_KERNELS, else the user cache's forge/kernels),
// keyed by a hash of the source, the architecture and the NVRTC and driver
// versions, so a second process loads instead of compiling. NVRTC gives
// the device's machine code (a cubin), so the driver compiles nothing
// either; FORGE_CUDA_PTX=1 caches PTX instead, as does an NVRTC older than
// 11.1, and a cubin the driver cannot load falls back to PTX. A plan's
// kernels, and the two hand-written programs, compile at the same time,
// one per core. Matrix products
// run on cuBLASLt (f32; with Options.Precision f16 or bf16 the operands are
// rounded to half precision, weights once, and accumulated in f32). The
// other ops are hand-written CUDA C in kernels.cu and attention.cu: attention with the
// scores kept on chip (online softmax over key tiles in shared memory;
// tensor cores for half-precision products; for a decoder step's few
// query rows, keys split between blocks and, for heads of 64, a kernel
// written for latency that issues every load of a key tile at once),
// softmax, layer and group norm (a warp per row for an encoder's many
// short rows), convolutions (direct, or im2col and one strided-batched
// product over a batch) and transposed convolutions, copies of matrices
// read down their columns (through shared-memory tiles), an LSTM that
// keeps its state in shared memory, gather,
// slice-update, repeat-interleave, pad, cumsum, the weight-only int8
// product (from 16 rows with constant weights, a batched decoder step's,
// a float32 cuBLASLt product on the weight dequantized once) and the
// integer ops of int8 models. What the backend does not
// support (kernels.Supporter) runs on the host through the graph's
// partitioning.
//
// # CUDA graphs
//
// Through kernels.Planner the backend receives each compiled program once:
// it compiles the program's generated kernels then, runs the program step
// by step the first time it meets a buffer table (so workspaces and
// cuBLASLt's algorithm choices exist), records it as a CUDA graph on the
// second run and replays it with one cuGraphLaunch after that. A Whisper
// decoder step, built once with the position as an input, is one graph
// launch per token.
//
// Such a step is still a chain of some forty short kernels, each waiting
// for the one before. On compute capability 9.0 the kernels written for
// that chain (the int8 products and the decoder's attention) begin by
// waiting for their inputs themselves (wait_inputs in common.cuh) and are
// launched as programmatic dependent launches (driver.LaunchEarly): each
// starts while the one before it finishes, its blocks resident and its
// constant weights requested by the time it may go on.
package cuda
