// Package gemm is the matrix-multiply core of the CPU backend: single-precision
// GEMM (C = alpha·op(A)·op(B) + beta·C, row-major) and integer GEMM with
// zero points (ONNX MatMulInteger semantics) for int8-quantized models.
//
// It works on plain slices and knows nothing about graphs or tensors, so it
// can be tested and benchmarked on its own and reused by any backend that
// holds host memory.
//
// # Paths
//
// An [Engine] runs every SGEMM on one of these paths, chosen when the engine
// is made (see [Engine.Path]):
//
//   - "openblas" / "accelerate" / "blas": the system BLAS's sgemm, loaded
//     with purego (no cgo). Linux tries libopenblas.so.0, libopenblas.so,
//     libblas.so.3 and libblas.so; macOS loads the Accelerate framework.
//     OpenBLAS's thread count is set to the engine's.
//   - "go-avx512", "go-avx2", "go-neon": cache-blocked Go GEMM (packed A and
//     B panels, register-blocked microkernel in Go assembly), parallel over
//     the engine's threads.
//   - "go": the same blocked driver with a portable pure-Go microkernel; the
//     fallback for other architectures and the reference the assembly
//     kernels are tested against.
//
// [Default] is the process-wide engine: it is built once, on first use, with
// GOMAXPROCS threads. It uses the system BLAS when one loads, unless the
// environment variable FORGE_BLAS is "off" (or "0", "false", "no"); a path in
// FORGE_BLAS names the library to load instead of the search list.
//
// Products with a single row or column of C (m == 1 or n == 1, e.g. a decoder
// step) skip packing on the Go path and run as dot products or row updates.
//
// # Integer GEMM
//
// For dynamically quantized models (ONNX DynamicQuantizeLinear →
// MatMulInteger → Mul → Add): [QuantizeU8] quantizes activations exactly as
// onnxruntime does; [PackU8] / [PackS8] pack a uint8 or int8 weight once
// (either layout, per-tensor or per-column zero points); [Engine.GemmU8]
// computes the int32 product and [Engine.GemmU8F32] the dequantized float32
// product with bias, fused. [Engine.MatMulIntegerU8] and
// [Engine.MatMulIntegerS8] are one-shot forms for a B used once. These always
// run in Go: with AVX-512 VNNI (vpdpbusd) when the CPU has it, AVX2
// (vpmaddwd) on other x86-64, else a portable kernel (see [Engine.IntPath]). They are exact: results equal the integer sum of products
// as long as it fits in an int32, which k·255·255 does for k ≤ 33025 — every
// layer Forge runs.
//
// # Errors
//
// Like the reference BLAS, these functions treat inconsistent dimensions,
// leading dimensions or too-short slices as programming errors and panic with
// a message that names the argument; shape checks on user data belong to the
// graph layer above.
package gemm
