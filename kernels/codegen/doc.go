// Package codegen generates the GPU kernels of fused elementwise steps and
// reductions: one generator, two dialects (CUDA C++ for NVRTC, and the
// Metal Shading Language).
//
// # Lowering and printing
//
// [LowerFused] turns an OpFused step into a [Kernel]: a small
// dialect-neutral program of typed statements (registers r0..rN, each
// assigned a tree of [Node]s) plus the access pattern of each operand
// over the output's coalesced index space. All semantics live in the
// lowering: it spells every [kernels.EOp] with the meaning kernels/cpu
// gives it (round half to even, floor modulo in the divisor's sign,
// NaN-propagating max/min with max(+0, −0) = +0, erf and tanh GELU,
// comparisons as 1/0, where), every load conversion (f16/bf16 widened
// exactly by bit manipulation, integers converted), and every store
// conversion (f32 → f16/bf16 rounded to nearest even by bit manipulation,
// or in CUDA to f16 by the hardware's cvt.rn, which rounds the same way;
// by way of float32 as the CPU does; float → integer truncated, saturated to
// int64 with NaN → 0, then wrapped to the width; Bool stores 1 for non-zero).
// Expr.Wide gives f64 registers. [Kernel.Source] prints it; a printer
// knows only spelling: type names, literals, operators, math functions,
// the kernel's signature and thread loop. [LowerReduce] and
// [ReduceKernel.Source] do the same for OpReduce.
//
// A kernel's source depends on the expression (dead statements dropped),
// the operands' dtypes, the rank of the coalesced index space, each
// operand's access pattern (strided, linear, or broadcast scalar), and
// whether indices fit in 32 bits; never on the sizes. Sizes, offsets and
// strides travel in a parameter block ([Fused.Params],
// [Reduction.Params]). An operand that is dense in the output's order
// (or a broadcast scalar) costs no index arithmetic; when every operand
// is, the kernel is a plain linear loop. Vectorized loads are not
// generated.
//
// The CUDA source has no #include: the half and bfloat16 conversions are
// generated helpers (integer bit manipulation, and one PTX cvt, sm_53 and
// later, for float to half), so the same text compiles on NVRTC 11.x
// through 13.x. The MSL source includes <metal_stdlib> only.
// Helpers are include-guarded, so sources can be concatenated into one
// program.
//
// # Names and cache keys
//
// Kernels are named fg_ew_<16 hex digits> (elementwise) and
// fg_red_<16 hex digits> (reductions): a SHA-256 prefix of the neutral
// text form ([Kernel.String]), so equal kernels have equal names across
// processes. CUDA kernels are extern "C" (the name is the symbol for
// cuModuleGetFunction). [Key] hashes a printed source with its dialect,
// for a disk cache; a backend adds the architecture and compiler version.
//
// # Elementwise kernels: parameters and launch
//
// With K = 1 + number of inputs operands (output first) and R the
// kernel's Rank, the parameter block is little-endian int64s, laid out as
// the generated struct <name>_params:
//
//	n               number of output elements
//	shape[R]        coalesced output shape (absent when R == 0)
//	off[K]          each operand's first element, in elements
//	stride[K][R]    each operand's strides, in elements (absent when R == 0)
//
// CUDA: void <name>(T0* out, const T1* in0, ..., const <name>_params p).
// cuLaunchKernel's kernelParams is {&out, &in0, ..., &in_{K-2}, params},
// where each buffer argument is the CUdeviceptr of element 0 of the
// operand's buffer (the view's Offset is in off[], not in the pointer) and
// params points at the bytes of Params(). Any block size; any grid with
// gridDim.x·blockDim.x ≤ 2^31 (the thread loop strides over the output, so
// ceil(n/block) capped at a few blocks per SM is the usual choice). Do not
// launch when n == 0.
//
// Metal: kernel void <name>(device T0* out [[buffer(0)]], device const
// T1* in0 [[buffer(1)]], ..., constant <name>_params& p [[buffer(K)]],
// uint gid [[thread_position_in_grid]], uint gsize [[threads_per_grid]]).
// setBuffer:offset:0 atIndex:i for operand i, setBytes:Params() atIndex:K,
// then dispatchThreads with any grid size ≥ 1 (the loop covers the rest).
//
// Element types: f32 → float, f16 and bf16 → unsigned short / ushort (raw
// bits), i32 → int, i64 → long long / long, u8 and bool → unsigned char /
// uchar, i8 → signed char / char.
//
// # Reductions: parameters and launch
//
// A reduction kernel has one of two shapes, told by ReduceKernel.PerThread
// (chosen when an output reduces at most [PerThreadMaxCount] elements).
// Per-thread: each thread reduces whole outputs alone, in kernels/cpu's
// order; threads loop over the outputs, so any block size and any grid
// work, as for elementwise kernels. Block: one output per thread block
// (threadgroup) of exactly [ReduceThreads] threads, which stride over the
// reduced elements and combine partial results in a shared-memory tree;
// blocks loop over the outputs, so any grid of at least one block works.
// Do not launch when Outputs == 0. The output view must be dense. KR and
// RR are the kernel's KeptRank and RedRank; the parameter block is
// little-endian int64s:
//
//	n_out, count, correction, in_off, out_off,
//	kshape[KR], kstride[KR], rshape[RR], rstride[RR]
//
// CUDA: void <name>(T0* out, const T1* in0, const <name>_params p),
// kernelParams {&out, &in0, params}; block kernels need blockDim.x =
// ReduceThreads and use static shared memory only (at most 4 KiB). Metal:
// out at buffer 0, in0 at 1, the parameter block at 2; a per-thread kernel
// takes uint gid [[thread_position_in_grid]], uint gsize
// [[threads_per_grid]] (dispatchThreads, any size), a block kernel uint tid
// [[thread_position_in_threadgroup]], uint group
// [[threadgroup_position_in_grid]], uint ngroups [[threadgroups_per_grid]]
// (dispatchThreadgroups with threadsPerThreadgroup = ReduceThreads).
//
// Sum, mean, var and prod accumulate in double on CUDA and in float on
// Metal (which has no double); a block's tree sums in a different order
// from kernels/cpu's sequential float64 loop, within the conformance kit's
// tolerances (a per-thread CUDA kernel sums in the same order). Var makes a second pass around the mean, divided by
// count − correction. Max, min, argmax and argmin order (value, index)
// pairs so the result is exactly kernels/cpu's sequential one in any
// order: the first NaN if there is one, else the first extreme element;
// argmax and argmin write the index (into I64 exactly).
//
// # Compiling
//
// CUDA: NVRTC with --gpu-architecture=compute_XX and no headers. NVRTC's
// default --fmad=true may contract a*b+c into one rounding; pass
// --fmad=false where results must equal kernels/cpu's bit for bit. Metal:
// the library must be compiled with fast math off (MTLCompileOptions
// mathMode = MTLMathModeSafe, or fastMathEnabled = NO before macOS 15):
// NaN tests are x != x, and fast math may fold them away. The generated
// MSL uses precise:: for the functions where the two modes differ.
//
// # Known differences from kernels/cpu
//
// Transcendental functions (exp, log, tanh, erf, sin, cos, pow) use the
// device's library and differ from kernels/cpu's vectorized ones by a few
// ulp. An i64 operand in f32 registers is rounded to float32 once, where
// kernels/cpu rounds by way of float64: they differ only for magnitudes
// above 2^53. Metal cannot run Wide expressions (no double):
// Kernel.Source fails with ErrUnsupported, and a Metal backend declines
// such steps. Metal's fmod is specified as x − y·trunc(x/y); whether
// Apple's precise::fmod is exact, as C's is, only a Mac can tell.
//
// # Checks without a GPU
//
// The tests compile every kernel the generator produces for a seeded
// random set (every EOp, every dtype in and out, Wide, ranks 0..6, every
// reduction kind and input dtype) and for the conformance kit's steps:
// CUDA to PTX for compute_90 with NVRTC (kernels/cuda/nvrtc; Debian's
// non-free libnvrtc11.2 in CI), MSL with clang against the shim of
// [github.com/tensorforge/forge/kernels/codegen/mslshim]; and they run
// the conformance kit (kernels/kerneltest) on the MSL kernels executed on
// the CPU through that shim, against kernels/cpu. Golden files in
// testdata/golden hold the reviewed text of a few kernels
// (go test -run Golden -update rewrites them).
package codegen
