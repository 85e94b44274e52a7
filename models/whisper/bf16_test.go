package whisper_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/wer"
)

// bf16Clips are the golden clips both sizes are compared on: every clip
// of ../shared/golden/audio with speech (base's goldens hold jfk's tokens
// only, but the comparison here is with F32, not with the goldens).
var bf16Clips = []string{"jfk", "cards_001", "cards_002", "cards_003", "cards_004", "cards_005", "goforward"}

// TestBF16Accuracy measures what the BF16 precision costs against F32 on
// a CPU with bfloat16 units (the figures are in the log and in
// reports/2026-11-24-whisper-bf16.md):
//
//   - the encoder output on jfk's golden features: relative L2 distance
//     and mean frame cosine against F32's;
//   - tokens on every golden clip decoded as the goldens were made (30-s
//     window, transformers.js rules, with and without timestamps): the
//     same ids as F32;
//   - word errors on the clips of ../shared/data (TestRealLengthTranscripts'
//     recordings, OpenAI's transcribe, the default RealLength windows,
//     with and without timestamps): no more than F32's.
func TestBF16Accuracy(t *testing.T) {
	if gemm.BF16ConvPath() == "" {
		t.Skip("no bfloat16 unit (AMX-BF16 or AVX512_BF16): BF16 computes as F32 here")
	}
	sizes := []string{"tiny", "base"}
	if testing.Short() {
		sizes = sizes[:1]
	}
	recs := dataRecordings(t)
	for _, size := range sizes {
		t.Run(size, func(t *testing.T) {
			f32, bf := model(t, size, whisper.F32), model(t, size, whisper.BF16)

			feats, _ := goldenF32(t, goldenFile(t, size, "jfk"), "input_features")
			hf, err := f32.EncoderOutput(bg, feats)
			if err != nil {
				t.Fatal(err)
			}
			hb, err := bf.EncoderOutput(bg, feats)
			if err != nil {
				t.Fatal(err)
			}
			var dd, nn float64
			for i := range hf {
				d := float64(hb[i]) - float64(hf[i])
				dd += d * d
				nn += float64(hf[i]) * float64(hf[i])
			}
			rel := math.Sqrt(dd / nn)
			cos, minCos := frameCosine(hb, hf, f32.Config().DModel)
			t.Logf("encoder on jfk (%s): rel L2 %.4f against f32, frame cosine mean %.5f, min %.5f", gemm.BF16ConvPath(), rel, cos, minCos)
			if rel > 0.05 || cos < 0.998 {
				t.Errorf("encoder: rel L2 %.4f (want ≤ 0.05), mean frame cosine %.5f (want ≥ 0.998)", rel, cos)
			}

			fp, bp := paddedModel(t, size, whisper.F32), paddedModel(t, size, whisper.BF16)
			same, total := 0, 0
			for _, clip := range bf16Clips {
				samples := clipSamples(t, clip)
				for _, ts := range []bool{false, true} {
					want := decodeGolden(t, fp, samples, ts)
					got := decodeGolden(t, bp, samples, ts)
					total++
					if slices.Equal(got.Tokens, want.Tokens) {
						same++
						continue
					}
					t.Errorf("%s timestamps=%v: bf16 %v %q, f32 %v %q", clip, ts, got.Tokens, got.Text, want.Tokens, want.Text)
				}
			}
			t.Logf("golden clips: bf16 tokens equal to f32's in %d of %d decodes", same, total)

			for _, ts := range []bool{true, false} {
				opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(f32.Tokenizer()))
				opts.Language, opts.Timestamps = "en", ts
				var wf, wb wer.Result
				sameText := 0
				for _, r := range recs {
					tf, err := f32.Transcribe(bg, r.samples, opts)
					if err != nil {
						t.Fatal(err)
					}
					tb, err := bf.Transcribe(bg, r.samples, opts)
					if err != nil {
						t.Fatal(err)
					}
					if tb.Text == tf.Text {
						sameText++
					} else {
						t.Logf("timestamps=%v %-10s bf16 %q, f32 %q", ts, r.name, tb.Text, tf.Text)
					}
					if r.ref != "" {
						wf = wf.Add(wer.Compare(r.ref, tf.Text))
						wb = wb.Add(wer.Compare(r.ref, tb.Text))
					}
				}
				t.Logf("data clips, timestamps=%v: WER bf16 %d/%d (%.1f %%), f32 %d/%d (%.1f %%); same text in %d of %d recordings",
					ts, wb.Errors(), wb.Words, 100*wb.Rate(), wf.Errors(), wf.Words, 100*wf.Rate(), sameText, len(recs))
				if wb.Errors() > wf.Errors() {
					t.Errorf("timestamps=%v: bf16 makes %d word errors, f32 %d", ts, wb.Errors(), wf.Errors())
				}
			}
		})
	}
}

// decodeGolden decodes a clip as the goldens were made: one window of
// 30 s, greedy, transformers.js's rules.
func decodeGolden(t *testing.T, m *whisper.Model, samples []float32, ts bool) *decode.Result {
	t.Helper()
	a, err := m.NewAudio(samples)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	w, err := a.Encode(bg, 0, min(a.Frames(), m.Config().Frames()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := decode.Decode(bg, w, m.Tokenizer(), decode.TransformersJSOptions("en", ts))
	if err != nil {
		t.Fatal(fmt.Errorf("decode: %w", err))
	}
	return res
}
