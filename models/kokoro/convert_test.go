package kokoro

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/onnx"
)

// openArtifact opens a converted artifact from the model cache, skipping
// loudly when it is not there.
func openArtifact(t *testing.T, id string) *weights.Artifact {
	t.Helper()
	a, err := weights.Open(id)
	if errors.Is(err, weights.ErrNotReady) {
		t.Skipf("SKIPPED: %s is not in the model cache: run `go run ./cmd/models fetch %s`: %v", id, id, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// onnxLSTMStep runs one LSTM step with ONNX semantics: W [4H,I], R [4H,H]
// and the bias halves Wb, Rb [4H] in gate order i, o, f, c.
func onnxLSTMStep(W, R, Wb, Rb []float32, x, h, c []float64, H int) (hn, cn []float64) {
	I := len(x)
	gate := func(k, j int) float64 {
		row := k*H + j
		s := float64(Wb[row]) + float64(Rb[row])
		for i := 0; i < I; i++ {
			s += float64(W[row*I+i]) * x[i]
		}
		for i := 0; i < H; i++ {
			s += float64(R[row*H+i]) * h[i]
		}
		return s
	}
	hn, cn = make([]float64, H), make([]float64, H)
	for j := 0; j < H; j++ {
		i, o, f, g := sigmoid(gate(0, j)), sigmoid(gate(1, j)), sigmoid(gate(2, j)), math.Tanh(gate(3, j))
		cn[j] = f*c[j] + i*g
		hn[j] = o * math.Tanh(cn[j])
	}
	return hn, cn
}

// torchLSTMStep runs one step with PyTorch semantics: gate order i, f, g, o.
func torchLSTMStep(Wih, Whh, bih, bhh []float32, x, h, c []float64, H int) (hn, cn []float64) {
	I := len(x)
	gate := func(k, j int) float64 {
		row := k*H + j
		s := float64(bih[row]) + float64(bhh[row])
		for i := 0; i < I; i++ {
			s += float64(Wih[row*I+i]) * x[i]
		}
		for i := 0; i < H; i++ {
			s += float64(Whh[row*H+i]) * h[i]
		}
		return s
	}
	hn, cn = make([]float64, H), make([]float64, H)
	for j := 0; j < H; j++ {
		i, f, g, o := sigmoid(gate(0, j)), sigmoid(gate(1, j)), math.Tanh(gate(2, j)), sigmoid(gate(3, j))
		cn[j] = f*c[j] + i*g
		hn[j] = o * math.Tanh(cn[j])
	}
	return hn, cn
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestKokoroLSTMSemantics runs one step of Kokoro's text-encoder LSTM, both
// directions, from the ONNX tensors with ONNX semantics and from the
// converted tensors with PyTorch semantics: the states must agree.
func TestKokoroLSTMSemantics(t *testing.T) {
	a := openArtifact(t, weights.KokoroV1)
	p, err := a.Path("model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ix := onnx.NewIndex(m.Graph)
	var node *onnx.Node
	for _, n := range m.Graph.Nodes {
		if n.Name == "/encoder/text_encoder/lstm/LSTM" {
			node = n
		}
	}
	if node == nil {
		t.Fatal("no text encoder LSTM in the graph")
	}
	W, R, B := ix.Consts[node.Inputs[1]], ix.Consts[node.Inputs[2]], ix.Consts[node.Inputs[3]]
	I, H := int(W.Dims[2]), int(R.Dims[2])
	rng := rand.New(rand.NewPCG(1, 2))
	x, h, c := make([]float64, I), make([]float64, H), make([]float64, H)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range h {
		h[i], c[i] = rng.NormFloat64()*0.5, rng.NormFloat64()*0.5
	}
	for d, suffix := range []string{"_l0", "_l0_reverse"} {
		wd := f32s(W.Raw[d*4*H*I*4 : (d+1)*4*H*I*4])
		rd := f32s(R.Raw[d*4*H*H*4 : (d+1)*4*H*H*4])
		bd := f32s(B.Raw[d*8*H*4 : (d+1)*8*H*4])
		wantH, wantC := onnxLSTMStep(wd, rd, bd[:4*H], bd[4*H:], x, h, c, H)
		get := func(n string) []float32 {
			v, _, err := a.Float32s("text_encoder.lstm." + n + suffix)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		gotH, gotC := torchLSTMStep(get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), x, h, c, H)
		for j := 0; j < H; j++ {
			if math.Abs(gotH[j]-wantH[j]) > 1e-9 || math.Abs(gotC[j]-wantC[j]) > 1e-9 {
				t.Fatalf("direction %d unit %d: PyTorch step h=%v c=%v, ONNX step h=%v c=%v", d, j, gotH[j], gotC[j], wantH[j], wantC[j])
			}
		}
	}
}

func TestReorderGates(t *testing.T) {
	// Rows labelled by ONNX gate (i=1, o=2, f=3, c=4), H=2 rows per gate.
	src := []byte{1, 1, 2, 2, 3, 3, 4, 4}
	got := reorderGates(src, 2, 1, 1)
	want := []byte{1, 1, 3, 3, 4, 4, 2, 2} // i, f, g(=c), o
	if string(got) != string(want) {
		t.Fatalf("reorderGates = %v, want %v", got, want)
	}
}

// TestVoicesMatchSources checks that each voice tensor holds exactly the
// bytes of its .bin file.
func TestVoicesMatchSources(t *testing.T) {
	a := openArtifact(t, weights.KokoroVoices)
	for _, v := range voiceSums {
		b, err := a.ReadFile(v.name + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		tn, err := a.Tensor(v.name)
		if err != nil {
			t.Fatal(err)
		}
		if string(tn.Data) != string(b) {
			t.Fatalf("voice %s differs from its source", v.name)
		}
	}
}
