package whisper

import "github.com/tensorforge/forge/graph"

// bf16Arith is the arithmetic of the BF16 precision's many-row graphs (the
// encoder and the cross-attention keys and values of its output): f32's,
// with every matrix product and convolution allowed to round its operands
// to bfloat16 and sum the products in float32 (graph.MatMulOpts and
// graph.ConvOpts BF16). The CPU backend runs those on its bfloat16 units
// (AMX tiles, or AVX512_BF16's VDPBF16PS at about twice the float32
// kernel's rate on AMD Zen 4) and computes in float32 where it has none
// or where they are slower than float32 (VDPBF16PS on Intel's cores),
// as GPU backends do; the model never asks which.
//
// Layer norms, GELU, attention (scores and softmax) and the residual
// stream stay float32.
func bf16Arith(g *graph.Graph) arith { return f32Arith{g: g, bf16: true} }

// bf16StepArith is the arithmetic of the BF16 precision's decoder steps:
// F32's (the weights read as their int8 bytes, LinearQ), with each row of
// a product's input rounded to 16-bit fixed point and the products summed
// exactly in integers (graph.LinearQOpts Int16) where the backend has
// 8-bit dot-product units (the CPU's AVX512_VNNI). A step is bound by
// streaming the weights, above all the logits' 51,865 × d table, and the
// float32 form spends four instructions on every 16 weight bytes (widen,
// subtract the zero point, convert, multiply) against one VPDPBUSD on 64.
//
// Bfloat16 weights would not help here: they take two bytes per weight to
// the int8 bytes' one (tiny's table 40 MB instead of 20, past this
// machine's 32 MB L3), and a rounded bfloat16 row loses more than the
// 16-bit grid. See reports/2026-11-24-whisper-decoder-bf16.md.
func bf16StepArith(g *graph.Graph) arith { return f32Arith{g: g, rowwise: true, bf16: true} }
