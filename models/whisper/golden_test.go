package whisper_test

import (
	"github.com/tensorforge/forge/internal/signalcmp"
	"slices"
	"testing"

	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/whispertest"
)

// Tolerances from ../shared/golden/whisper-*/README.md. The int8 encoder
// re-quantizes its activations at every layer, so rounding flips cascade:
// other onnxruntime executions of the same file differ from the golden by
// rel L2 0.085 (tiny) / 0.055 (base).
var encoderTol = map[string]float64{"tiny": 0.15, "base": 0.12}

const (
	minFrameCosine = 0.99
	logitsTol      = 1e-2
)

// TestGoldenEncoder feeds the golden input_features to the int8 encoder
// and compares its output with onnxruntime's.
func TestGoldenEncoder(t *testing.T) {
	for _, size := range []string{"tiny", "base"} {
		t.Run(size, func(t *testing.T) {
			m := model(t, size, whisper.Int8)
			f := goldenFile(t, size, "jfk")
			feats, _ := goldenF32(t, f, "input_features")
			want, shape := goldenF32(t, f, "encoder_last_hidden_state")
			got, err := m.EncoderOutput(bg, feats)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("encoder output has %d values, golden %v", len(got), shape)
			}
			rel := signalcmp.RelL2(got, want)
			mean, low := frameCosine(got, want, m.Config().DModel)
			t.Logf("%s int8 encoder vs golden: rel L2 %.4f, max abs %.3f, frame cosine mean %.5f min %.4f", size, rel, signalcmp.MaxAbs(got, want), mean, low)
			if rel > encoderTol[size] || mean < minFrameCosine {
				t.Errorf("rel L2 %.4f (tolerance %.2f), mean frame cosine %.5f (tolerance %.2f)", rel, encoderTol[size], mean, minFrameCosine)
			}
		})
	}
}

// TestGoldenStep0Logits feeds the golden encoder output and the 4-token
// prefix to the int8 decoder and compares the logits at every position.
func TestGoldenStep0Logits(t *testing.T) {
	for _, size := range []string{"tiny", "base"} {
		t.Run(size, func(t *testing.T) {
			m := model(t, size, whisper.Int8)
			f := goldenFile(t, size, "jfk")
			hidden, _ := goldenF32(t, f, "encoder_last_hidden_state")
			want, _ := goldenF32(t, f, "decoder_step0_logits")
			prefix := goldenIDs(t, f, "token_ids")[:4]
			w, err := m.Attach(bg, hidden)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			V := m.Config().Vocab
			rows := make([][]float32, 4)
			for i := range rows {
				rows[i] = make([]float32, V)
			}
			if err := w.Start(bg, 1, prefix, []int{0, 1, 2, 3}, rows); err != nil {
				t.Fatal(err)
			}
			got := slices.Concat(rows...)
			rel := signalcmp.RelL2(got, want)
			t.Logf("%s int8 step-0 logits vs golden: rel L2 %.2e, max abs %.2e", size, rel, signalcmp.MaxAbs(got, want))
			if rel > logitsTol {
				t.Errorf("rel L2 %.3e > %.0e", rel, logitsTol)
			}
			for i := range 4 {
				g, w := whispertest.Argmax(rows[i]), whispertest.Argmax(want[i*V:(i+1)*V])
				if g != w {
					t.Errorf("position %d: argmax %d, golden %d", i, g, w)
				}
			}
		})
	}
}

// goldenClips lists the clips with tokens for each size.
var goldenClips = map[string][]string{
	"tiny": {"jfk", "cards_001", "cards_002", "cards_003", "cards_004", "cards_005", "goforward"},
	"base": {"jfk"},
}

// fragile lists the alternatives the golden README accepts where other
// onnxruntime executions flip a near-tie: cards_005 without timestamps,
// cards_004 with timestamps.
var fragile = map[string][][]int32{
	"tiny/cards_005": {
		{1649, 295, 637, 2977, 11, 1017, 295, 39139, 11, 1614, 295, 8852, 13},
		{17708, 295, 1738, 2977, 11, 1451, 295, 15428, 11, 3407, 295, 8852, 13},
	},
}

// TestGoldenTokens decodes every golden clip greedily in int8 with the
// transformers.js rules, from the audio (features computed here, the
// window padded to 30 s as the goldens were made), and compares the token
// ids with the golden ones, without and with timestamps.
//
// It also decodes each with OpenAI's full suppress_tokens list added (the
// goldens have only the first-step suppression): the log says whether the
// list changes the ids, and no suppressed token may appear.
func TestGoldenTokens(t *testing.T) {
	changes := 0
	defer func() { t.Logf("OpenAI's suppress_tokens changed %d golden decodes", changes) }()
	for _, size := range []string{"tiny", "base"} {
		for _, clip := range goldenClips[size] {
			t.Run(size+"/"+clip, func(t *testing.T) {
				m := paddedModel(t, size, whisper.Int8)
				f := goldenFile(t, size, clip)
				a, err := m.NewAudio(clipSamples(t, clip))
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				dec, err := a.Encode(bg, 0, min(a.Frames(), m.Config().Frames()))
				if err != nil {
					t.Fatal(err)
				}
				for _, ts := range []bool{false, true} {
					name, prefix := "token_ids", 4
					if ts {
						name, prefix = "token_ids_timestamps", 3
					}
					ids := goldenIDs(t, f, name)
					want := ids[prefix : len(ids)-1]
					res, err := decode.Decode(bg, dec, m.Tokenizer(), decode.TransformersJSOptions("en", ts))
					if err != nil {
						t.Fatal(err)
					}
					if suppressionChanges(t, m, dec, ts, res.Tokens) {
						changes++
					}
					if slices.Equal(res.Tokens, want) {
						t.Logf("timestamps=%v: %d tokens equal: %q", ts, len(want), res.Text)
						continue
					}
					if alt := softMatch(size+"/"+clip, ts, res.Tokens, want); alt != "" {
						t.Logf("timestamps=%v: fragile case, took the alternative the README lists (%s): %q", ts, alt, res.Text)
						continue
					}
					t.Errorf("timestamps=%v:\n got %v %q\nwant %v", ts, res.Tokens, res.Text, want)
				}
			})
		}
	}
}

// softMatch reports which listed alternative got is, for the two fragile
// cases, or "".
func softMatch(key string, ts bool, got, want []int32) string {
	switch {
	case key == "tiny/cards_005" && !ts:
		for _, alt := range fragile[key] {
			if slices.Equal(got, alt) {
				return "cards_005 alternative"
			}
		}
	case key == "tiny/cards_004" && ts:
		// the last timestamp <|2.00|> may be <|1.50|>
		if len(got) == len(want) && slices.Equal(got[:len(got)-1], want[:len(want)-1]) && got[len(got)-1] == 50439 {
			return "<|1.50|> for <|2.00|>"
		}
	}
	return ""
}

// suppressionChanges decodes again with OpenAI's suppress list added and
// reports whether the ids differ from plain; the result must hold none of
// the suppressed tokens.
func suppressionChanges(t *testing.T, m *whisper.Model, dec decode.Decoder, ts bool, plain []int32) bool {
	t.Helper()
	tok := m.Tokenizer()
	opts := decode.TransformersJSOptions("en", ts)
	opts.SuppressTokens = tok.NonSpeechTokens()
	res, err := decode.Decode(bg, dec, tok, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range res.Tokens {
		if slices.Contains(opts.SuppressTokens, id) {
			t.Errorf("timestamps=%v: suppressed token %d in %v", ts, id, res.Tokens)
		}
	}
	changed := !slices.Equal(res.Tokens, plain)
	if changed {
		t.Logf("timestamps=%v: the full suppress list changes the ids to %v %q", ts, res.Tokens, res.Text)
	}
	return changed
}
