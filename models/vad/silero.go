package vad

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/models/param"
)

// The network, one type per module of Silero's VADRNNJIT (the TorchScript
// model the ONNX export inlines): stft → encoder (four SileroVadBlocks) →
// decoder (VADDecoderRNNJIT). Each type's constructor reads its weights
// from the module's scope and its forward method builds the graph; the
// comments name the ONNX nodes each line stands for (16 kHz sizes, one
// stream). fast.go runs the same weights as panel products.

// branch is VADRNNJIT for one sample rate.
type branch struct {
	geometry
	bins    int
	stft    stft
	encoder [4]encoderBlock
	decoder vadDecoder
}

// encoderShapes are the encoder's convolutions (in, out, stride) as the
// ONNX Conv nodes give them; kernel 3, padding 1 throughout. in of the
// first is the STFT's bins.
var encoderShapes = [4][3]int{{0, 128, 1}, {128, 64, 2}, {64, 64, 2}, {64, 128, 1}}

// newBranch reads one branch's weights from its scope (the model's root
// for 16 kHz, model_8k for 8 kHz).
func newBranch(s *param.Scope, geo geometry) (*branch, error) {
	b := &branch{geometry: geo, bins: geo.filter/2 + 1}
	b.stft = newSTFT(s.Sub("stft"), geo)
	enc := s.Sub("encoder")
	in := b.bins
	for i, sh := range encoderShapes {
		b.encoder[i] = newEncoderBlock(enc.Index(i), in, sh[1], sh[2])
		in = sh[1]
	}
	b.decoder = newVADDecoder(s.Sub("decoder"))
	if err := s.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

// forward builds one call of the network for N streams at once: x is [N,
// context+chunk] samples, h0 and c0 are [1, N, Hidden]. It returns the
// speech probabilities [N] and the new LSTM state hN, cN [1, N, Hidden].
func (b *branch) forward(x, h0, c0 graph.Tensor) (prob, hN, cN graph.Tensor) {
	h := b.stft.forward(x)
	// /encoder/{0..3}/reparam_conv/Conv + activation/Relu → [1, 128, 1].
	for i := range b.encoder {
		h = b.encoder[i].forward(h)
	}
	return b.decoder.forward(h, h0, c0)
}

// stft is STFT: the magnitude spectrum as a strided convolution with the
// fixed [cos; sin] basis (forward_basis_buffer [2·bins, 1, filter]).
type stft struct {
	basis          param.Tensor
	bins, hop, pad int
}

func newSTFT(s *param.Scope, geo geometry) stft {
	bins := geo.filter/2 + 1
	return stft{basis: s.F32("forward_basis_buffer", 2*bins, 1, geo.filter), bins: bins, hop: geo.hop, pad: geo.pad}
}

// forward maps samples [N, L] to magnitudes [N, bins, frames].
func (m *stft) forward(x graph.Tensor) graph.Tensor {
	// /stft/padding/Pad: reflect-pad 64 samples on the right → [1, 640].
	x = x.Pad1d(kernels.PadReflect, 0, m.pad)
	// /stft/Conv → [1, 258, 4] (real parts, then imaginary parts).
	spec := x.Unsqueeze(1).Conv1d(m.basis.In(x.Graph()), graph.Tensor{}, graph.ConvOpts{Stride: m.hop})
	// /stft/Slice_1..4, Pow, Pow_1, Add, Sqrt: the magnitude → [1, 129, 4].
	re := spec.Slice(1, 0, m.bins)
	im := spec.Slice(1, m.bins, 2*m.bins)
	return re.Mul(re).Add(im.Mul(im)).Sqrt()
}

// encoderBlock is SileroVadBlock: reparam_conv (Conv1d, kernel 3, padding
// 1) and a ReLU.
type encoderBlock struct {
	w, b                 param.Tensor // reparam_conv.weight [out, in, 3], .bias [out]
	in, out, stride, ker int
}

func newEncoderBlock(s *param.Scope, in, out, stride int) encoderBlock {
	const k = 3
	return encoderBlock{
		w: s.F32("reparam_conv.weight", out, in, k), b: s.F32("reparam_conv.bias", out),
		in: in, out: out, stride: stride, ker: k,
	}
}

func (m *encoderBlock) forward(h graph.Tensor) graph.Tensor {
	g := h.Graph()
	return h.Conv1d(m.w.In(g), m.b.In(g), graph.ConvOpts{Stride: m.stride, Padding: 1}).Relu()
}

// vadDecoder is VADDecoderRNNJIT: rnn (an LSTMCell, gates i, f, g, o) and
// decoder (Dropout, ReLU, a 1×1 Conv1d to one logit, Sigmoid).
type vadDecoder struct {
	wih, whh, bih, bhh param.Tensor // rnn
	convW, convB       param.Tensor // decoder.2
}

func newVADDecoder(s *param.Scope) vadDecoder {
	rnn := s.Sub("rnn")
	return vadDecoder{
		wih: rnn.F32("weight_ih", 4*Hidden, Hidden), whh: rnn.F32("weight_hh", 4*Hidden, Hidden),
		bih: rnn.F32("bias_ih", 4*Hidden), bhh: rnn.F32("bias_hh", 4*Hidden),
		convW: s.F32("decoder.2.weight", 1, Hidden, 1), convB: s.F32("decoder.2.bias", 1),
	}
}

// forward runs one cell step on the encoder's features h [N, 128, 1] with
// the carried state and returns the speech probabilities [N] and the new
// state.
func (m *vadDecoder) forward(h, h0, c0 graph.Tensor) (prob, hN, cN graph.Tensor) {
	g := h.Graph()
	// /decoder/Squeeze (the If on a last axis of 1), /decoder/rnn/LSTM: one
	// LSTMCell step on the 128 features with the carried h and c.
	feat := h.Squeeze(2).Unsqueeze(0) // [T=1, B=N, 128]
	_, hN, cN = feat.LSTM(graph.LSTMWeights{WIH: m.wih.In(g), WHH: m.whh.In(g), BIH: m.bih.In(g), BHH: m.bhh.In(g)},
		nil, h0, c0, false)
	// /decoder/Unsqueeze, decoder/1/Relu, decoder/2/Conv, decoder/3/Sigmoid
	// → [1, 1, 1]; /Squeeze (If on axis 1), /ReduceMean over axis 1 → [1].
	y := hN.Squeeze(0).Unsqueeze(-1) // [N, 128, 1]
	y = y.Relu().Conv1d(m.convW.In(g), m.convB.In(g), graph.ConvOpts{}).Sigmoid()
	prob = y.Squeeze(1).Mean(false, 1)
	return prob, hN, cN
}
