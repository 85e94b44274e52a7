package vad

import (
	"context"
	"fmt"
	"sync"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/weights"
)

// Sample rates the model has a branch for.
const (
	Rate16k = 16000
	Rate8k  = 8000
)

// geometry is what differs between the two branches of the export, as the
// ONNX constants give it: 16 kHz takes 512 new samples with 64 of context,
// reflect-pads 64 on the right and runs a 256-point STFT with hop 128
// (four frames, 129 bins); 8 kHz halves everything (65 bins).
type geometry struct {
	rate    int
	chunk   int // new samples per call
	context int // samples carried over from the previous call
	filter  int // STFT window length (forward basis kernel size)
	hop     int // STFT hop (basis convolution stride)
	pad     int // reflect padding on the right of the input
}

var geometries = []geometry{
	{rate: Rate16k, chunk: 512, context: 64, filter: 256, hop: 128, pad: 64},
	{rate: Rate8k, chunk: 256, context: 32, filter: 128, hop: 64, pad: 32},
}

// Hidden is the LSTM width; the state of a stream is [2, 1, Hidden] (h, c).
const Hidden = 128

// param is one weight: its PyTorch name, shape and data (aliasing the mapped
// artifact; read-only).
type param struct {
	name  string
	shape graph.Shape
	data  []float32
}

// branch is the network for one sample rate.
type branch struct {
	geometry
	basis                    param    // stft.forward_basis_buffer [2·bins, 1, filter]
	encW, encB               [4]param // encoder.{0..3}.reparam_conv
	wih, whh, bih, bhh       param    // decoder.rnn (LSTMCell, gates i,f,g,o)
	decW, decB               param    // decoder.decoder.2 (1×1 conv to one logit)
	bins                     int
	encStride                [4]int
	encIn, encOut, encKernel [4]int
}

// Model is Silero VAD v6 bound to an engine. It is safe for concurrent use:
// all streams share its weights and compiled programs, and each stream keeps
// its own state in a Detector.
type Model struct {
	eng      *graph.Engine
	art      *weights.Artifact // closed by Close when Open loaded it
	branches map[int]*branch
	fast     map[int]*fastNet // by rate; empty where the compiled programs run

	mu       sync.Mutex
	idle     map[int][]*runner      // recycled per-stream programs and states, by rate
	idleFast map[int][]*fastStreams // recycled fast-path stream buffers, by rate
	close    bool
}

// Open loads the silero-vad-v6 artifact from the model cache (fetching and
// converting it on first use) and binds it to eng. Close releases it.
func Open(ctx context.Context, eng *graph.Engine) (*Model, error) {
	a, err := weights.Load(ctx, weights.SileroVADv6)
	if err != nil {
		return nil, fmt.Errorf("vad: %w", err)
	}
	m, err := New(eng, a)
	if err != nil {
		a.Close()
		return nil, err
	}
	m.art = a
	return m, nil
}

// New binds already-opened weights to eng. The artifact must stay open
// while the model is in use; the caller closes it.
func New(eng *graph.Engine, a *weights.Artifact) (*Model, error) {
	if eng == nil || a == nil {
		return nil, fmt.Errorf("vad: New needs an engine and an artifact")
	}
	m := &Model{eng: eng, branches: map[int]*branch{}, fast: map[int]*fastNet{},
		idle: map[int][]*runner{}, idleFast: map[int][]*fastStreams{}}
	useFast := fastAvailable(eng.Backend().Name())
	for _, geo := range geometries {
		prefix := ""
		if geo.rate == Rate8k {
			prefix = "model_8k."
		}
		b, err := loadBranch(a, geo, prefix)
		if err != nil {
			if geo.rate == Rate16k {
				return nil, err
			}
			continue // the 8 kHz branch is optional
		}
		m.branches[geo.rate] = b
		if useFast {
			// A geometry the fast path is not laid out for keeps the
			// compiled program; the weights loaded, so that is no error.
			if n, err := newFastNet(b); err == nil {
				m.fast[geo.rate] = n
			}
		}
	}
	return m, nil
}

// Path says how the model computes a chunk on this machine, for logs and
// reports: "fast (panels: avx512)" when streams run the fused CPU sequence
// of fast.go, "graph" when they run compiled programs on the engine (a
// GPU engine, or a CPU without a SIMD panel kernel).
func (m *Model) Path() string {
	if len(m.fast) > 0 {
		return "fast (panels: " + gemm.PanelPath() + ")"
	}
	return "graph"
}

// Close releases the recycled detector programs and, when Open loaded the
// weights, the weights. Detectors still open must not be used afterwards.
func (m *Model) Close() error {
	m.mu.Lock()
	idle := m.idle
	m.idle, m.idleFast, m.close = nil, nil, true
	m.mu.Unlock()
	for _, rs := range idle {
		for _, r := range rs {
			r.close()
		}
	}
	if m.art != nil {
		err := m.art.Close()
		m.art = nil
		return err
	}
	return nil
}

// Engine returns the engine the model runs on.
func (m *Model) Engine() *graph.Engine { return m.eng }

// SampleRates lists the rates the loaded weights support (16000 first).
func (m *Model) SampleRates() []int {
	var r []int
	for _, geo := range geometries {
		if m.branches[geo.rate] != nil {
			r = append(r, geo.rate)
		}
	}
	return r
}

// ChunkSize returns how many new samples one call scores at rate (512 at
// 16 kHz, 256 at 8 kHz), or an error wrapping ErrSampleRate.
func (m *Model) ChunkSize(rate int) (int, error) {
	b, err := m.branch(rate)
	if err != nil {
		return 0, err
	}
	return b.chunk, nil
}

// CheckFormat reports whether audio with this rate and channel count can
// be scored as it is: ErrNotMono for several channels, ErrSampleRate for a
// rate without a branch.
func (m *Model) CheckFormat(rate, channels int) error {
	if channels != 1 {
		return fmt.Errorf("%w: %d channels (mix down to one first)", ErrNotMono, channels)
	}
	_, err := m.branch(rate)
	return err
}

func (m *Model) branch(rate int) (*branch, error) {
	if b := m.branches[rate]; b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("%w: %d Hz (the model takes %v; resample first)", ErrSampleRate, rate, m.SampleRates())
}

// loadBranch reads and checks one branch's weights.
func loadBranch(a *weights.Artifact, geo geometry, prefix string) (*branch, error) {
	b := &branch{geometry: geo, bins: geo.filter/2 + 1}
	get := func(name string, shape ...int) (param, error) {
		data, got, err := a.Float32s(prefix + name)
		if err != nil {
			return param{}, fmt.Errorf("vad: %d Hz branch: %w", geo.rate, err)
		}
		if !graph.Shape(got).Equal(shape) {
			return param{}, fmt.Errorf("vad: %d Hz branch: %s has shape %v, want %v", geo.rate, prefix+name, got, shape)
		}
		return param{name: prefix + name, shape: shape, data: data}, nil
	}
	var err error
	if b.basis, err = get("stft.forward_basis_buffer", 2*b.bins, 1, geo.filter); err != nil {
		return nil, err
	}
	// encoder: (in, out, stride) as the ONNX Conv nodes give them; kernel 3,
	// padding 1 throughout.
	b.encIn = [4]int{b.bins, 128, 64, 64}
	b.encOut = [4]int{128, 64, 64, 128}
	b.encStride = [4]int{1, 2, 2, 1}
	b.encKernel = [4]int{3, 3, 3, 3}
	for i := range 4 {
		if b.encW[i], err = get(fmt.Sprintf("encoder.%d.reparam_conv.weight", i), b.encOut[i], b.encIn[i], b.encKernel[i]); err != nil {
			return nil, err
		}
		if b.encB[i], err = get(fmt.Sprintf("encoder.%d.reparam_conv.bias", i), b.encOut[i]); err != nil {
			return nil, err
		}
	}
	for _, p := range []struct {
		dst   *param
		name  string
		shape []int
	}{
		{&b.wih, "decoder.rnn.weight_ih", []int{4 * Hidden, Hidden}},
		{&b.whh, "decoder.rnn.weight_hh", []int{4 * Hidden, Hidden}},
		{&b.bih, "decoder.rnn.bias_ih", []int{4 * Hidden}},
		{&b.bhh, "decoder.rnn.bias_hh", []int{4 * Hidden}},
		{&b.decW, "decoder.decoder.2.weight", []int{1, Hidden, 1}},
		{&b.decB, "decoder.decoder.2.bias", []int{1}},
	} {
		if *p.dst, err = get(p.name, p.shape...); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (p param) on(g *graph.Graph) graph.Tensor { return g.ParamF32(p.name, p.shape, p.data) }

// forward builds one call of the network for N streams at once: x is [N,
// context+chunk] samples, h0 and c0 are [1, N, Hidden]. It returns the
// speech probabilities [N] and the new LSTM state hN, cN [1, N, Hidden].
// The comments name the ONNX nodes each line stands for (16 kHz sizes, one
// stream).
func (b *branch) forward(x, h0, c0 graph.Tensor) (prob, hN, cN graph.Tensor) {
	g := x.Graph()
	// /stft/padding/Pad: reflect-pad 64 samples on the right → [1, 640].
	x = x.Pad1d(kernels.PadReflect, 0, b.pad)
	// /stft/Conv: the STFT as a strided convolution with the fixed
	// [cos; sin] basis → [1, 258, 4] (real parts, then imaginary parts).
	spec := x.Unsqueeze(1).Conv1d(b.basis.on(g), graph.Tensor{}, graph.ConvOpts{Stride: b.hop})
	// /stft/Slice_1..4, Pow, Pow_1, Add, Sqrt: the magnitude → [1, 129, 4].
	re := spec.Slice(1, 0, b.bins)
	im := spec.Slice(1, b.bins, 2*b.bins)
	h := re.Mul(re).Add(im.Mul(im)).Sqrt()
	// /encoder/{0..3}/reparam_conv/Conv + activation/Relu → [1, 128, 1].
	for i := range 4 {
		h = h.Conv1d(b.encW[i].on(g), b.encB[i].on(g), graph.ConvOpts{Stride: b.encStride[i], Padding: 1}).Relu()
	}
	// /decoder/Squeeze (the If on a last axis of 1), /decoder/rnn/LSTM: one
	// LSTMCell step on the 128 features with the carried h and c.
	feat := h.Squeeze(2).Unsqueeze(0) // [T=1, B=N, 128]
	_, hN, cN = feat.LSTM(graph.LSTMWeights{WIH: b.wih.on(g), WHH: b.whh.on(g), BIH: b.bih.on(g), BHH: b.bhh.on(g)},
		nil, h0, c0, false)
	// /decoder/Unsqueeze, decoder/1/Relu, decoder/2/Conv, decoder/3/Sigmoid
	// → [1, 1, 1]; /Squeeze (If on axis 1), /ReduceMean over axis 1 → [1].
	y := hN.Squeeze(0).Unsqueeze(-1) // [N, 128, 1]
	y = y.Relu().Conv1d(b.decW.on(g), b.decB.on(g), graph.ConvOpts{}).Sigmoid()
	prob = y.Squeeze(1).Mean(false, 1)
	return prob, hN, cN
}
