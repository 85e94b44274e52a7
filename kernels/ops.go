package kernels

import "fmt"

// Op identifies a kernel. Elementwise work of any kind is one op, OpFused,
// whose arithmetic is described by an Expr; everything else is a kernel with a
// fixed meaning and an attribute struct.
type Op uint8

// Kernel-level operations. The comment on each gives its operands.
const (
	OpInvalid Op = iota
	// OpFused: In = loaded operands (any strides, broadcast by stride 0),
	// Out[0] = result; Expr says what to compute.
	OpFused
	// OpReduce: In[0] = x; Out[0] = x reduced over ReduceAttr.Axes (those
	// axes have extent 1 in the output view). ArgMax/ArgMin write I64.
	OpReduce
	// OpSoftmax: In[0] = x, Out[0] = softmax or log-softmax along an axis.
	OpSoftmax
	// OpLayerNorm: In = x, [weight, bias]; normalises over the trailing axes
	// from NormAttr.Axis on.
	OpLayerNorm
	// OpGroupNorm: In = x [N, C, ...], [weight [C], bias [C]].
	OpGroupNorm
	// OpMatMul: In = a, b, [bias [N]]; batched over leading axes with
	// broadcasting by stride 0; the two trailing axes of a and b must have a
	// unit stride in one of them.
	OpMatMul
	// OpConv1d: In = x [N, Cin, L], w [Cout, Cin/groups, K], [bias [Cout]].
	OpConv1d
	// OpConvTranspose1d: In = x [N, Cin, L], w [Cin, Cout/groups, K], [bias].
	OpConvTranspose1d
	// OpLSTM: In = x, then per direction w_ih [4H, I], w_hh [4H, H],
	// b_ih [4H], b_hh [4H] (PyTorch gate order i, f, g, o), then h0, c0
	// [D, B, H]. Out = y, hN, cN.
	OpLSTM
	// OpGather: In = data, indices (I32/I64); picks slices along an axis.
	OpGather
	// OpRepeatInterleave: In = x, counts (I32/I64) along an axis.
	OpRepeatInterleave
	// OpPad: In[0] = x; constant, reflect or replicate padding.
	OpPad
	// OpCumsum: In[0] = x; running sum along an axis.
	OpCumsum
	// OpMatMulInteger: In = a (U8), b (U8/I8), a_zero (scalar), b_zero
	// (scalar or per output column); Out = I32 [M, N] as ONNX MatMulInteger.
	OpMatMulInteger
	// OpConvInteger1d: In = x (U8), w (U8/I8), x_zero, w_zero; Out = I32,
	// as ONNX ConvInteger.
	OpConvInteger1d
	// OpDynamicQuantize: In[0] = x (F32); Out = q (U8), scale (F32 [1]),
	// zero point (U8 [1]) as ONNX DynamicQuantizeLinear.
	OpDynamicQuantize
	// OpLinearQ: In = x (F32 [M, K]), w (U8/I8 [N, K]), scale (F32, one
	// value), zero (w's dtype, one value); Out = F32 [M, N] =
	// x·((w − zero)·scale)ᵀ: weight-only quantization, activations stay
	// float32 (the weight streams as one byte per element). Attr:
	// LinearQAttr or nil.
	OpLinearQ
	// OpAttention: In = q [..., n, d], k [..., s, d], v [..., s, dv]
	// (batched over leading axes with broadcasting by stride 0, each
	// trailing matrix with a unit stride in one axis, as OpMatMul's), then
	// an optional additive mask: [n, s] shared by every batch item, or
	// [..., n, s] with the output's batch axes (stride 0 where shared; a
	// mask per item lets a batch of sequences attend over lengths of their
	// own); Out = softmax(q·kᵀ + mask)·v [..., n, dv], the scores never
	// leaving the kernel.
	OpAttention
	// OpSliceUpdate: In = src, start (I32/I64: one value, or one per
	// index of the axes before AxisAttr.Axis, row-major); Out[0] = the
	// whole destination (a State), dense. Writes src into the destination
	// at start along AxisAttr.Axis; every other element keeps its value, so
	// the output is read-modify-write. src matches the destination except
	// along that axis. Starts per outer index let a batch of sequences
	// append to caches at positions of their own. A start that does not
	// fit is an error where the backend can report one; no backend writes
	// outside the window.
	OpSliceUpdate
	opCount
)

var opNames = [...]string{
	"invalid", "fused", "reduce", "softmax", "layer_norm", "group_norm",
	"matmul", "conv1d", "conv_transpose1d", "lstm", "gather",
	"repeat_interleave", "pad", "cumsum", "matmul_integer", "conv_integer1d",
	"dynamic_quantize", "linear_q", "attention", "slice_update",
}

// String returns the op's name.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// ReduceKind selects the reduction of OpReduce.
type ReduceKind uint8

// Reductions.
const (
	ReduceSum ReduceKind = iota
	ReduceMean
	ReduceMax
	ReduceMin
	ReduceProd
	ReduceArgMax
	ReduceArgMin
	ReduceVar
)

// ReduceAttr configures OpReduce.
type ReduceAttr struct {
	Kind ReduceKind
	Axes []int // sorted, distinct, non-negative
	// Correction is subtracted from the count in the variance denominator
	// (0: population variance, 1: unbiased, as torch.var's correction).
	Correction int
}

// SoftmaxAttr configures OpSoftmax.
type SoftmaxAttr struct {
	Axis int
	Log  bool
}

// NormAttr configures OpLayerNorm (Axis = first normalised axis) and
// OpGroupNorm (Groups).
type NormAttr struct {
	Axis   int
	Groups int
	Eps    float32
}

// MatMulAttr configures OpMatMul and OpMatMulInteger. TransA/TransB mean the
// operand's two trailing axes are read transposed. A step without the
// attribute (Attr nil) is a plain float32 product.
type MatMulAttr struct {
	TransA, TransB bool
	// BF16: the product may round its operands to bfloat16, summing in
	// float32 (see graph.MatMulOpts); a backend without a faster path for
	// that computes in float32 and may ignore it.
	BF16 bool
}

// LinearQAttr configures OpLinearQ. A step without the attribute (Attr
// nil) computes in float32.
type LinearQAttr struct {
	// Int16: the product may round each row of x to 16-bit fixed point and
	// sum exactly in integers (see graph.LinearQOpts); a backend without a
	// faster path for that computes in float32 and may ignore it.
	Int16 bool
}

// ConvAttr configures the 1-D convolutions.
type ConvAttr struct {
	Stride        int
	PadLeft       int
	PadRight      int
	Dilation      int
	Groups        int
	OutputPadding int  // transposed convolution only
	BF16          bool // the convolution may round its operands to bfloat16 (see graph.ConvOpts)
	Winograd      bool // the convolution may run by Winograd's minimal filtering (see graph.ConvOpts)
}

// LSTMAttr configures OpLSTM.
type LSTMAttr struct {
	Hidden        int
	Bidirectional bool
	BatchFirst    bool // x and y are [B, T, *] instead of [T, B, *]
}

// AxisAttr configures ops that work along one axis (gather,
// repeat_interleave).
type AxisAttr struct {
	Axis int
}

// PadMode selects how OpPad fills.
type PadMode uint8

// Padding modes, as torch.nn.functional.pad.
const (
	PadConstant PadMode = iota
	PadReflect
	PadReplicate
)

// PadAttr configures OpPad: Before[i] and After[i] elements are added on
// axis i.
type PadAttr struct {
	Mode          PadMode
	Before, After []int
	Value         float64
}

// CumsumAttr configures OpCumsum.
type CumsumAttr struct {
	Axis      int
	Exclusive bool
	Reverse   bool
}
