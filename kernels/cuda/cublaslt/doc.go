// Package cublaslt binds cuBLASLt (libcublasLt.so.13, .12 or .11) through
// purego, without cgo, and offers Handle.Matmul: a row-major,
// strided-batched GEMM
//
//	C[b] = alpha·op(A[b])·op(B[b]) + beta·C[b] (+ bias)
//
// in f32 (optionally TF32 tensor cores), or f16 or bf16 inputs with f32
// accumulation and an f32 or same-type output.
//
// # Row-major on a column-major library
//
// cuBLASLt's layouts are column-major. A row-major r×c matrix read
// column-major is its c×r transpose with the same leading dimension, so
// row-major C = op(A)·op(B) is issued as column-major Cᵀ = op(B)ᵀ·op(A)ᵀ:
// cuBLASLt's A is our B, its B our A, its m, n, k our N, M, K, and the
// transpose flags carry over unchanged (GEMM.lt). The bias epilogue then
// adds one value per row of cuBLASLt's D, which is one per column of our
// C: a linear layer's bias. Batches are CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
// and CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET (in elements) on every
// layout; a zero stride for A or B shares one matrix across the batch.
//
// # Plans
//
// The first product of each configuration (types, shape, transposes,
// leading dimensions, batch strides, bias, workspace size, and the
// alignment of every pointer, which the heuristic must be told: it
// assumes 256 bytes otherwise) creates its descriptors, asks
// cublasLtMatmulAlgoGetHeuristic for the best algorithm, and caches both
// in the Handle. Prepare does this ahead of a stream capture. The caller
// provides the workspace (RecommendedWorkspace for Hopper).
//
// # Threads
//
// cuBLASLt uses the current context of the calling OS thread: create,
// use and close a Handle on the driver.Thread that owns the device's
// primary context. Load needs neither a driver nor a device.
//
// # Verified where
//
// Enum values and the heuristic result's layout come from the CUDA 11.8
// cublasLt.h, cublas_api.h and library_types.h, checked against cudarc
// v0.18.1's bindings of CUDA 11.4-13.0 (unchanged). On the development
// machine (no GPU) Debian's cuBLASLt 11.11 loads and binds every entry
// point, and every descriptor and preference this package builds is
// accepted (cuBLASLt checks each attribute's size: a wrong size is
// refused, which the test also checks); the row-major mapping is checked
// against a simulation of cuBLASLt's column-major semantics. The products
// themselves (TestGPUMatmul: f32, TF32, f16 and bf16, transposes, padded
// leading dimensions, batches with a shared operand, bias; and a product
// captured into a CUDA graph and replayed) run on the GPU machine from a
// test binary built here; they skip without a driver.
package cublaslt
