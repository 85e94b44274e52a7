// Package kerneltest is the conformance kit for Forge backends, and the
// textbook float64 references it and the graph's tests share.
//
// A backend's tests call [Check] with the backend under test:
//
//	func TestConformance(t *testing.T) {
//		b, err := cuda.New(kernels.Options{})
//		if err != nil {
//			t.Skipf("no device: %v", err)
//		}
//		kerneltest.Check(t, b)
//	}
//
// Check runs every [kernels.Op] — reductions of every kind, softmax and
// log-softmax, layer and group norm, matrix products (transposed operands,
// broadcast batch axes, bias), the convolutions, the LSTM, gather,
// repeat-interleave, the three paddings, cumsum, the integer ops of int8
// models, weight-only quantized products, attention with and without a
// mask, slice-update — and fused expressions: random register programs
// that use every [kernels.EOp] (mixed input dtypes, float64 "Wide"
// registers, registers overwritten in place), every instruction on special
// values (NaN, infinities, signed zeros, ties, denormals), and every
// dtype conversion. Operands come with random shapes and strides: permuted
// axes, slices with steps, broadcast axes (stride 0), offsets, GEMM
// operands stored transposed or with a larger leading dimension, outputs
// that are windows of a larger array, and about a third of the cases with
// all operands in one arena buffer as a compiled program has them;
// weights are handed over with Backend.Wrap now and then.
//
// Each case goes through the backend's Queue: Write the buffers, Launch
// the step, Read them back. Check compares every output with kernels/cpu
// running the same step (or, with [AgainstFloat64], with this package's
// float64 references, which is how the CPU backend itself is checked), by
// relative L2 error and largest absolute error against tolerances stated
// per op in the code, each with the reason for its size. A NaN or infinity
// where the reference has none, or the reverse, never passes; nor does a
// byte changed outside a step's outputs, a launch error or a panic. Steps
// the backend declines through [kernels.Supporter] are skipped and listed.
// One compact table in the test log gives, per group of cases, the count,
// the worst errors and the tolerance.
//
// Cases are generated from a seeded random source ([Seed]): the same on
// every run and machine. The whole kit runs in well under a second on the
// CPU.
//
// [Partial] is a test double of a new device backend: it supports a given
// set of ops (OpFused and OpMatMul by default), keeps its memory out of
// the host's reach (no kernels.HostMapper) and counts launches and copies,
// so tests can run whole models on a partitioned graph.Engine and report
// what crossed between device and host.
//
// The references ([ND] and the functions on it: [MatMul], [Conv1d],
// [LSTM], [Attention], [EvalExpr], ...) are written for clarity, not
// speed, from the ops' documentation, independently of any backend.
package kerneltest
