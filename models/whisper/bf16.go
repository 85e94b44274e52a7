package whisper

import "github.com/tensorforge/forge/graph"

// bf16Arith is the arithmetic of the BF16 precision's many-row graphs (the
// encoder and the cross-attention keys and values of its output): f32's,
// with every matrix product and convolution allowed to round its operands
// to bfloat16 and sum the products in float32 (graph.MatMulOpts and
// graph.ConvOpts BF16). The CPU backend runs those on its bfloat16 units
// (AMX tiles, or AVX512_BF16's VDPBF16PS at about twice the float32
// kernel's rate on AMD Zen 4) and computes in float32 where it has none,
// as GPU backends do; the model never asks which.
//
// Layer norms, GELU, attention (scores and softmax) and the residual
// stream stay float32. Decoder steps run as F32 (stepArith): they are
// bound by streaming the weights, which F32's LinearQ already reads as
// int8 bytes, half of bfloat16's.
func bf16Arith(g *graph.Graph) arith { return f32Arith{g: g, bf16: true} }
