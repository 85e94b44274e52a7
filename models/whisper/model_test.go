package whisper_test

import (
	"context"
	"errors"
	"github.com/tensorforge/forge/internal/signalcmp"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/models/whisper/whispertest"
)

const jfkRef = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."

// logitsTo returns n logit rows of the model's vocabulary.
func logitRows(m *whisper.Model, n int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, m.Config().Vocab)
	}
	return rows
}

// TestKVCacheMatchesFullPass checks the self-attention cache: logits after
// feeding tokens one step at a time equal those of one pass over the whole
// sequence (which computes every position afresh), in both precisions.
func TestKVCacheMatchesFullPass(t *testing.T) {
	for _, prec := range []whisper.Precision{whisper.F32, whisper.Int8} {
		t.Run(prec.String(), func(t *testing.T) {
			m := model(t, "tiny", prec)
			f := goldenFile(t, "tiny", "jfk")
			hidden, _ := goldenF32(t, f, "encoder_last_hidden_state")
			ids := goldenIDs(t, f, "token_ids")[:12]
			w, err := m.Attach(bg, hidden)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			full := logitRows(m, 1)
			if err := w.Start(bg, 1, ids, []int{len(ids) - 1}, full); err != nil {
				t.Fatal(err)
			}
			step := logitRows(m, 1)
			if err := w.Start(bg, 1, ids[:4], []int{3}, step); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids[4:] {
				if err := w.Step(bg, []int32{id}, step); err != nil {
					t.Fatal(err)
				}
			}
			if w.Positions() != len(ids) {
				t.Errorf("cache holds %d positions, want %d", w.Positions(), len(ids))
			}
			// F32 differs by summation order only. Int8 re-quantizes each
			// call's activations over the tokens it is given (per tensor), so
			// one pass over 12 tokens and single steps round differently:
			// the same prediction and a loose distance.
			tol := 1e-4
			if prec == whisper.Int8 {
				tol = 0.25
			}
			rel := signalcmp.RelL2(step[0], full[0])
			t.Logf("%s: incremental vs full pass: rel L2 %.2e, argmax %d / %d", prec, rel, whispertest.Argmax(step[0]), whispertest.Argmax(full[0]))
			if rel > tol || whispertest.Argmax(step[0]) != whispertest.Argmax(full[0]) {
				t.Errorf("rel L2 %.3e (tolerance %.0e), argmax %d vs %d", rel, tol, whispertest.Argmax(step[0]), whispertest.Argmax(full[0]))
			}
		})
	}
}

// TestReorder checks Reorder against decoding the kept hypotheses afresh:
// two beams take different tokens, both continue from beam 1, and both
// must then give beam 1's logits.
func TestReorder(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	f := goldenFile(t, "tiny", "jfk")
	hidden, _ := goldenF32(t, f, "encoder_last_hidden_state")
	ids := goldenIDs(t, f, "token_ids")
	w, err := m.Attach(bg, hidden)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rows := logitRows(m, 2)
	if err := w.Start(bg, 2, ids[:4], []int{3}, rows[:1]); err != nil {
		t.Fatal(err)
	}
	if err := w.Step(bg, []int32{ids[4], 293}, rows); err != nil { // " And" / a different word
		t.Fatal(err)
	}
	if whispertest.Argmax(rows[0]) == whispertest.Argmax(rows[1]) && signalcmp.RelL2(rows[0], rows[1]) < 1e-3 {
		t.Fatal("different tokens gave the same logits")
	}
	if err := w.Reorder([]int{1, 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Step(bg, []int32{ids[5], ids[5]}, rows); err != nil {
		t.Fatal(err)
	}
	// Reference: beam 1's path decoded on its own.
	ref := logitRows(m, 1)
	if err := w.Start(bg, 1, slices.Concat(ids[:4], []int32{293, ids[5]}), []int{5}, ref); err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		if rel := signalcmp.RelL2(rows[b], ref[0]); rel > 1e-4 {
			t.Errorf("beam %d after Reorder([1 1]): rel L2 %.3e from beam 1's path", b, rel)
		}
	}
}

// TestBeamSearch decodes jfk with five beams: the sentence, word for word.
func TestBeamSearch(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
	opts.Language, opts.BeamSize = "en", 5
	tr, err := m.Transcribe(bg, clipSamples(t, "jfk"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := wer.Compare(jfkRef, tr.Text); r.Errors() != 0 {
		t.Errorf("beam 5: %q: %+v", tr.Text, r)
	}
}

// TestF32Transcripts: f32 mode must get jfk word for word (every size;
// small has no goldens of its own, so this is its check that a 12-layer,
// 768-wide config runs through the same code); the transcripts of every
// golden clip and their distance to the int8 goldens' text are logged.
func TestF32Transcripts(t *testing.T) {
	for _, size := range []string{"tiny", "base", "small"} {
		m := model(t, size, whisper.F32)
		clips := goldenClips["tiny"]
		if testing.Short() || size != "tiny" {
			clips = []string{"jfk"}
		}
		for _, clip := range clips {
			opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
			opts.Language = "en"
			tr, err := m.Transcribe(bg, clipSamples(t, clip), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s f32 %s: %q", size, clip, tr.Text)
			if clip == "jfk" {
				if r := wer.Compare(jfkRef, tr.Text); r.Errors() != 0 {
					t.Errorf("%s f32 jfk: %q: %+v", size, tr.Text, r)
				}
			}
		}
	}
}

// TestLongForm transcribes 37 s (jfk, goforward and the five cards clips
// with two seconds of silence after each): two windows, the seek moving by the
// last timestamp, segments in order, and the words of every clip.
func TestLongForm(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	var long []float32
	refs := []string{jfkRef, "go forward ten meters"}
	for _, clip := range []string{"jfk", "goforward", "cards_001", "cards_002", "cards_003", "cards_004", "cards_005"} {
		long = append(long, clipSamples(t, clip)...)
		long = append(long, make([]float32, 32000)...)
	}
	refs = append(refs, "ten of clubs", "four queen of clubs", "seven of clubs", "five five", "eight of spades four of clubs seven of hearts")
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
	opts.Language = "en"
	tr, err := m.Transcribe(bg, long, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := wer.Compare(strings.Join(refs, " "), tr.Text)
	t.Logf("%.1f s: %d segments, WER %d/%d: %q", float64(len(long))/16000, len(tr.Segments), r.Errors(), r.Words, tr.Text)
	if r.Rate() > 0.15 {
		t.Errorf("long form: %+v", r)
	}
	last := 0.0
	for _, s := range tr.Segments {
		if s.Start < last-1e-9 || s.End < s.Start || s.End > float64(len(long))/16000+0.02 {
			t.Errorf("segment %.2f–%.2f after %.2f", s.Start, s.End, last)
		}
		last = s.End
	}
	if last < 30 {
		t.Errorf("the segments end at %.2f s: the second window was not transcribed", last)
	}
}

// TestLanguageDetection: with no language given, jfk is English.
func TestLanguageDetection(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	tr, err := m.Transcribe(bg, clipSamples(t, "jfk"), decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer())))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Language != "en" || tr.LanguageProbs["en"] < 0.5 {
		t.Errorf("language %q (p(en) = %.3f)", tr.Language, tr.LanguageProbs["en"])
	}
}

// TestBadArguments: malformed inputs get errors that name them.
func TestBadArguments(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	if _, err := m.Encode(bg, make([]float32, 100)); err == nil || !strings.Contains(err.Error(), "features") {
		t.Errorf("short features: %v", err)
	}
	if _, err := m.Attach(bg, make([]float32, 100)); err == nil || !strings.Contains(err.Error(), "encoder output") {
		t.Errorf("short encoder output: %v", err)
	}
	if _, err := m.NewAudio(make([]float32, 100)); !errors.Is(err, whisper.ErrEmptyAudio) {
		t.Errorf("100 samples: %v, want ErrEmptyAudio", err)
	}
	nan := make([]float32, 16000)
	nan[5] = float32(math.NaN())
	if _, err := m.NewAudio(nan); err == nil {
		t.Error("NaN sample: no error")
	}
	a, err := m.NewAudio(make([]float32, 16000))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Encode(bg, 0, 5000); err == nil {
		t.Error("window of 5000 frames: no error")
	}
	if _, err := a.Encode(bg, 200, 100); err == nil {
		t.Error("seek past the end: no error")
	}
	dec, err := a.Encode(bg, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	w := dec.(*whisper.Window)
	rows := logitRows(m, 1)
	for name, err := range map[string]error{
		"step before start":    w.Step(bg, []int32{1}, rows),
		"reorder before start": w.Reorder([]int{0}),
		"no beams":             w.Start(bg, 0, []int32{50258}, []int{0}, rows),
		"empty prefix":         w.Start(bg, 1, nil, []int{0}, rows),
		"position outside":     w.Start(bg, 1, []int32{50258}, []int{1}, rows),
		"short row":            w.Start(bg, 1, []int32{50258}, []int{0}, [][]float32{make([]float32, 10)}),
		"token outside vocab":  w.Start(bg, 1, []int32{60000}, []int{0}, rows),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := w.Start(bg, 1, []int32{50258}, []int{0}, rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Step(bg, []int32{1, 2}, rows); err == nil {
		t.Error("two tokens for one hypothesis: no error")
	}
	if err := w.Reorder([]int{3}); err == nil {
		t.Error("reorder from hypothesis 3 of 1: no error")
	}
	w.Close()
	if err := w.Step(bg, []int32{1}, rows); !errors.Is(err, whisper.ErrClosed) {
		t.Errorf("step after Close: %v, want ErrClosed", err)
	}
}

// TestCancelled: a cancelled context stops the encoder with its error.
func TestCancelled(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := m.Transcribe(ctx, clipSamples(t, "jfk"), decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer())))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled transcription: %v", err)
	}
}

func TestParsePrecisionAndModels(t *testing.T) {
	for p, name := range map[whisper.Precision]string{whisper.F32: "f32", whisper.Int8: "int8", whisper.BF16: "bf16"} {
		if got, err := whisper.ParsePrecision(p.String()); p.String() != name || err != nil || got != p {
			t.Errorf("%v: String %q (want %q), parsed back as %v, %v", p, p.String(), name, got, err)
		}
	}
	for in, want := range map[string]whisper.Precision{"f32": whisper.F32, "INT8": whisper.Int8, "float32": whisper.F32, "BFloat16": whisper.BF16} {
		if got, err := whisper.ParsePrecision(in); err != nil || got != want {
			t.Errorf("ParsePrecision(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := whisper.ParsePrecision("f16"); !errors.Is(err, whisper.ErrUnknownPrecision) {
		t.Errorf("f16: %v", err)
	}
	for in, want := range map[string]string{"base": "whisper-base", "small": "whisper-small", "whisper-small": "whisper-small"} {
		if id, err := whisper.ArtifactID(in); err != nil || id != want {
			t.Errorf("%s: %q %v", in, id, err)
		}
	}
	if _, err := whisper.ArtifactID("large"); !errors.Is(err, whisper.ErrUnknownModel) {
		t.Errorf("large: %v", err)
	}
}

// TestConcurrentTranscriptions: one model serves two goroutines at once
// (each audio owns its decoding state) with the results of a serial run.
func TestConcurrentTranscriptions(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
	opts.Language = "en"
	clips := []string{"cards_001", "goforward"}
	want := make([]string, len(clips))
	for i, c := range clips {
		tr, err := m.Transcribe(bg, clipSamples(t, c), opts)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = tr.Text
	}
	got := make([]string, len(clips))
	errs := make([]error, len(clips))
	var wg sync.WaitGroup
	for i, c := range clips {
		samples := clipSamples(t, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := m.Transcribe(bg, samples, opts)
			if err == nil {
				got[i] = tr.Text
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range clips {
		if errs[i] != nil || got[i] != want[i] {
			t.Errorf("%s: concurrent %q (%v), serial %q", clips[i], got[i], errs[i], want[i])
		}
	}
}

// TestDecoderStepBuiltOnce: decoding more tokens builds no more graphs and
// compiles no more programs; the step program takes the position as an
// input and appends to the cache in place.
func TestDecoderStepBuiltOnce(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	feats, _ := goldenF32(t, goldenFile(t, "tiny", "jfk"), "input_features")
	w, err := m.Encode(bg, feats)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	prefix, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, false)
	if err != nil {
		t.Fatal(err)
	}
	logits := [][]float32{make([]float32, m.Config().Vocab)}
	if err := w.Start(bg, 1, prefix, []int{len(prefix) - 1}, logits); err != nil {
		t.Fatal(err)
	}
	token := []int32{440}
	if err := w.Step(bg, token, logits); err != nil {
		t.Fatal(err)
	}
	before := m.Engine().Stats()
	for w.Positions() < 30 {
		if err := w.Step(bg, token, logits); err != nil {
			t.Fatal(err)
		}
	}
	after := m.Engine().Stats()
	if after.GraphBuilds != before.GraphBuilds || after.Compiles != before.Compiles {
		t.Errorf("%d more steps built %d graphs and compiled %d programs, want none", 30-len(prefix)-1,
			after.GraphBuilds-before.GraphBuilds, after.Compiles-before.Compiles)
	}
}

// TestTranscribeMany: recordings transcribed together (one batched encoder
// pass, concurrent decoding) read as each transcribed alone.
func TestTranscribeMany(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
	opts.Language = "en"
	jfk := clipSamples(t, "jfk")
	recs := [][]float32{jfk, jfk[:len(jfk)/2], jfk[len(jfk)/3:]}
	got, err := m.TranscribeMany(bg, recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		want, err := m.Transcribe(bg, r, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Text != want.Text {
			t.Errorf("recording %d: together %q, alone %q", i, got[i].Text, want.Text)
		}
	}
	if _, err := m.EncodeBatch(bg, [][]float32{make([]float32, 10)}); err == nil {
		t.Error("EncodeBatch accepted features of the wrong size")
	}
}
