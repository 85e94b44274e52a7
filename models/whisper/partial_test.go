package whisper_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/kernels/kerneltest"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// TestPartialBackend runs Whisper tiny on jfk.wav on an engine whose
// backend supports only fused expressions and matrix products: every other
// step (convolutions, norms, softmax, the int8 products, attention, ...)
// runs on the host with copies in between. The encoder output, the
// decoder's logits and the transcript must equal the CPU backend's bit for
// bit, since the same CPU kernels compute every step — except in f32 where
// the CPU's float32 products go to a system BLAS (CPUs without AVX-512,
// see gemm.Default): there the partitioned engine's encoder multiplies its
// folded float32 weights through the BLAS, and the CPU engine its byte
// weights through the Go kernel (gemm.SGEMMQ8), two roundings of the same
// sums, so values must agree to within float32 rounding instead.
func TestPartialBackend(t *testing.T) {
	clip, err := audio.ReadWAVFile(shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	if clip.SampleRate != 16000 {
		t.Fatalf("jfk.wav is %d Hz", clip.SampleRate)
	}
	for _, prec := range []whisper.Precision{whisper.F32, whisper.Int8} {
		t.Run(prec.String(), func(t *testing.T) {
			ref := model(t, "tiny", prec)
			m, dev, host, eng := partialModel(t, prec)

			// The encoder on the first window.
			au, err := ref.NewAudio(clip.Samples)
			if err != nil {
				t.Fatal(err)
			}
			feats, err := au.Features(nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			au.Close()
			want, err := ref.EncoderOutput(bg, feats)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.EncoderOutput(bg, feats)
			if err != nil {
				t.Fatal(err)
			}
			same := sameBits
			if prec == whisper.F32 && !strings.HasPrefix(gemm.Path(), "go") {
				t.Logf("float32 products through %s: values compared within rounding", gemm.Path())
				same = closeTo
			}
			same(t, "encoder output", got, want)

			// The transcript, decoded greedily at temperature 0.
			opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(ref.Tokenizer()))
			opts.Language = "en"
			wantTr, err := ref.Transcribe(bg, clip.Samples, opts)
			if err != nil {
				t.Fatal(err)
			}
			gotTr, err := m.Transcribe(bg, clip.Samples, opts)
			if err != nil {
				t.Fatal(err)
			}
			if gotTr.Text != wantTr.Text {
				t.Errorf("transcript %q, the CPU backend's %q", gotTr.Text, wantTr.Text)
			}
			var tokens []int32
			for i, s := range wantTr.Segments {
				tokens = append(tokens, s.Tokens...)
				if i >= len(gotTr.Segments) || !slices.Equal(gotTr.Segments[i].Tokens, s.Tokens) {
					t.Errorf("segment %d's tokens differ from the CPU backend's", i)
				}
			}

			// The decoder's logits at every position of the start sequence
			// followed by the transcript's first tokens.
			prefix, err := ref.Tokenizer().SOTSequence("en", tokenizer.Transcribe, true)
			if err != nil {
				t.Fatal(err)
			}
			prefix = append(prefix, tokens[:min(len(tokens), 8)]...)
			wantLogits := logitsAt(t, ref, want, prefix)
			gotLogits := logitsAt(t, m, want, prefix)
			for i := range wantLogits {
				same(t, "logits", gotLogits[i], wantLogits[i])
			}

			st, c := eng.Stats(), dev.Counts()
			t.Logf("whisper tiny %s, jfk (%q): %d device steps (%v), %d host steps, %d transfers (%d bytes), %d programs compiled, %d constants uploaded (%d bytes)",
				prec, gotTr.Text, c.Launches, c.PerOp, host.Stats().Dispatches, st.Transfers, st.TransferBytes, st.Compiles, c.Wraps, c.WrapBytes)
			if st.Transfers == 0 || host.Stats().Dispatches == 0 {
				t.Errorf("nothing ran on the host: the engine did not partition")
			}
		})
	}
}

// partialModel opens Whisper tiny on an engine whose device supports only
// fused expressions and matrix products, the CPU backend running the rest.
func partialModel(t *testing.T, prec whisper.Precision) (*whisper.Model, *kerneltest.Partial, *cpu.Backend, *graph.Engine) {
	t.Helper()
	a := openArtifact(t, "tiny")
	t.Cleanup(func() { a.Close() })
	dev, host := kerneltest.NewPartial(), cpu.New()
	eng := graph.NewEngine(dev, graph.WithHost(host))
	m, err := whisper.New(eng, a, prec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, dev, host, eng
}

// TestKeptEncoder encodes windows of three lengths, twice over, on an
// engine whose backend is not the CPU, where a session keeps its compiled
// encoder programs (two at most, so the third length evicts the first).
// Each window's first logits must equal, bit for bit, those of the same
// window through EncoderOutput and Attach, which build their graphs every
// time: a kept program that read a previous window's features, wrote
// another session's states or was used after its eviction would fail.
func TestKeptEncoder(t *testing.T) {
	clip, err := audio.ReadWAVFile(shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	m, _, _, eng := partialModel(t, whisper.F32)
	au, err := m.NewAudio(clip.Samples)
	if err != nil {
		t.Fatal(err)
	}
	defer au.Close()
	feats, err := au.Features(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	nMels, W := m.Config().NMels, m.Config().Frames()
	prefix, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, true)
	if err != nil {
		t.Fatal(err)
	}
	at := make([]int, len(prefix))
	for i := range at {
		at[i] = i
	}
	first := func(encode func() (*whisper.Window, error)) []float32 {
		w, err := encode()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		rows := logitRows(m, len(prefix))
		if err := w.Start(bg, 1, prefix, at, rows); err != nil {
			t.Fatal(err)
		}
		return rows[len(rows)-1]
	}
	compiles := eng.Stats().Compiles
	for round := range 2 {
		for _, frames := range []int{1200, 400, 3000} {
			f := make([]float32, 0, nMels*frames)
			for b := range nMels {
				f = append(f, feats[b*W:b*W+frames]...)
			}
			kept := first(func() (*whisper.Window, error) { return m.Encode(bg, f) })
			built := first(func() (*whisper.Window, error) {
				h, err := m.EncoderOutput(bg, f)
				if err != nil {
					return nil, err
				}
				return m.Attach(bg, h)
			})
			sameBits(t, fmt.Sprintf("round %d, %d frames: last logits", round, frames), kept, built)
		}
	}
	t.Logf("%d programs compiled for six windows of three lengths", eng.Stats().Compiles-compiles)
}

// logitsAt returns the decoder's logits at every position of prefix, on
// the encoder output hidden.
func logitsAt(t *testing.T, m *whisper.Model, hidden []float32, prefix []int32) [][]float32 {
	t.Helper()
	w, err := m.Attach(bg, hidden)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	at := make([]int, len(prefix))
	for i := range at {
		at[i] = i
	}
	rows := logitRows(m, len(prefix))
	if err := w.Start(bg, 1, prefix, at, rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// closeTo fails unless got is within float32 rounding of sums in another
// order of want: relative L2 distance at most 1e-5.
func closeTo(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, the CPU backend's %d", what, len(got), len(want))
	}
	var d, n float64
	for i := range want {
		e := float64(got[i]) - float64(want[i])
		d += e * e
		n += float64(want[i]) * float64(want[i])
	}
	if r := math.Sqrt(d / n); !(r <= 1e-5) {
		t.Fatalf("%s: relative L2 distance %.3g from the CPU backend's, want ≤ 1e-5", what, r)
	}
}

// sameBits fails unless got and want hold the same float32 bits.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, the CPU backend's %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v on the partitioned engine, %v on the CPU backend", what, i, got[i], want[i])
		}
	}
}
