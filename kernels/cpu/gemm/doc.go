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
// GOMAXPROCS threads. On a CPU with AVX-512 it runs the Go path; elsewhere
// the system BLAS when one loads. The environment variable FORGE_BLAS
// overrides: "on" (or "1", "true", "yes") for the system BLAS, "off" (or
// "0", "false", "no") for the Go path, a file path for that BLAS library.
// [Path] says which was chosen and why.
//
// Why Go on AVX-512: measured on the 2-core Sapphire Rapids VM Forge is
// built on (Debian 12's OpenBLAS 0.3.21, pthread build; other processes on
// the machine, so figures vary by ±20%), OpenBLAS wins on large square
// products alone (1024³: 185 vs 136 GFLOP/s; Whisper's 1500×1536×384 MLP:
// 187 vs 122), but its idle threads spin for a while after every call and
// take the CPU from the goroutines that run everything else, and its sgemm
// packs B on every call. Whole models run faster on the Go path, with
// constant weights packed once ([Engine.PackB]):
//
//	                               FORGE_BLAS=on   Go path (default)
//	Kokoro forward, fox sentence   RTF 0.21–0.22   RTF 0.17–0.18
//	   CPU-s per audio-s           0.37–0.39       0.29–0.30
//	Whisper tiny encoder (f32)     0.47–0.51 s     0.29–0.30 s  (CPU 0.92–0.98 s vs 0.52–0.54 s)
//	Whisper base encoder (f32)     0.92–0.95 s     0.70 s
//	Whisper tiny transcribe (f32)  RTF 0.070–0.088 RTF 0.059–0.060
//
// Products with a single row or column of C (m == 1 or n == 1, e.g. a decoder
// step) skip packing on the Go path and run as dot products or row updates;
// products of a few rows by a packed weight run in one parallel phase.
//
// # Convolutions
//
// [Engine.Conv1d] is an implicit-GEMM 1-D convolution: no im2col matrix. Each
// task copies the input frames its output columns read into a window, and an
// offset microkernel reads every B row (one channel at one tap) in place
// from it; the weight is packed once ([Engine.PackConvWeight]). It runs at
// 110–130 GFLOP/s per core on Kokoro's generator shapes, against 35–50 for
// im2col + SGEMM. On CPUs with AMX-BF16 (and an OS that grants the tile
// state), a weight packed by [Engine.PackConvWeightBF16] runs on the tile
// unit in bfloat16 with float32 sums: 600–1200 GFLOP/s per core, for layers
// known to tolerate the rounding (BenchmarkConv1d). On CPUs with
// AVX512_BF16 but no AMX, on AMD's Zen 4 and 5, the same weight runs the
// implicit GEMM on VDPBF16PS, two depth steps per instruction: about twice
// the float32 kernel's rate, 160–200 GFLOP/s per CPU-second against 86–103
// on a Zen 4 (EPYC, family 25 model 17). Intel's cores issue VDPBF16PS at
// half the FMAs' rate, where it runs at 0.6 times the float32 kernel's
// rate, so they keep float32 unless AMX is granted. [BF16ConvPath] says
// which.
//
// [Engine.WinogradConv1d] computes stride-1 convolutions of 3 to 11 taps by
// Winograd's minimal filtering (winograd.go): 2.25–3.5 times fewer products,
// a weight transformed and packed once ([Engine.PackWinograd]), at a
// relative error of up to ~2e-4 against the exact sum (1e-6 for 3 taps),
// for layers whose users measured that harmless. On Kokoro's generator
// shapes it ran 1.4–2.4 times as fast as Conv1d on Intel's cores without
// AMX (BenchmarkWinograd); where a bfloat16 unit runs the layer, the
// backend prefers that.
//
// # bfloat16 GEMM
//
// For products with a constant weight whose users measured that the
// rounding is harmless (Whisper's encoder with its bf16 precision),
// [Engine.PackBF16] rounds B to bfloat16 and packs it once, and
// [Engine.GemmBF16] computes C = A·B + bias with A rounded as it is
// packed and the products summed in float32, on the unit [BF16ConvPath]
// names: AMX tiles (the convolution's tile kernel), or VDPBF16PS through
// the convolution's pair kernel, whose offset table then walks a packed B
// sliver. On the Zen 4 EPYC above, Whisper's encoder shapes run at
// 195–210 GFLOP/s per CPU-second against 86–104 for the float32 GEMM with
// the same weight packed (BenchmarkGemmBF16); [BF16Weight.Path] says which
// unit a weight runs on.
//
// # Byte weights
//
// A weight stored as bytes with one scale and zero point (Whisper's int8
// export) is multiplied without a float32 copy: [Engine.LinearQ8] for a
// few rows (dot products that read the weight once for all of them, as a
// decoder step does), and [Engine.SGEMMQ8] for many: the blocked GEMM
// whose B slivers are widened from the bytes, dequantized and transposed
// as they are packed (AVX-512; 16×16 bytes a step), the values a
// dequantized copy holds, so its sums are SGEMM's bit for bit. Packing on
// every call costs k·n conversions against m·k·n products: on Whisper
// tiny's MLP (1536×384) 0.18 ms a call, within 2 % of [Engine.SGEMMPackedB]
// at 600 rows, where holding the packed float32 weight would cost four
// times the bytes of the file.
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
