package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
)

// languageCases are, per language say speaks, a voice of that language,
// the code Whisper decodes in, the Whisper size that judges, and one or
// two everyday sentences (the round trip runs Kokoro and Whisper on them,
// so they stay short; English has its own round trips beside). Figures:
// reports/2026-11-23-languages.md.
//
// Hindi is judged by Whisper small in Urdu. Whisper base cannot tell
// Kokoro's Hindi from its own weakness: told "hi" it writes the Urdu
// script or Latin letters, in Urdu it merges words ("دیسکتے" for
// "دے سکتے") and mishears short ones (43 %). Small, told "hi", writes
// Devanagari, but spells it loosely: 15 errors in 29 words (52 %) against
// the sentences as written — long vowels short ("अप" for "आप", "अज" for
// "आज"), "मुसम" for "मौसम", "हूं" for "हूँ", "बाजार" for "बाज़ार" — where
// the same audio decoded in Urdu comes back nearly word for word (آپ,
// آج, موسم right): 4 errors in 30 words (13 %), all in two sentences
// ("گھر جا" heard as "کھر چاہ", "کیسے ہیں" as "کیسی ہے"), which base
// mishears too and so are Kokoro's share. Everyday Hindi and Urdu are one
// spoken language, so Whisper small decodes in Urdu and its words are
// compared with the same sentences written in Urdu script (refs), with
// the others' 25 % bound.
//
// TestEveryListedVoice has every voice of a language speak its first
// sentence, judged the same way: keep the first short and everyday.
var languageCases = []languageCase{
	{"en-us", "af_heart", "en", "base", 0.25, []string{
		"Please call me back when you arrive at the station.",
	}, nil},
	{"en-gb", "bf_emma", "en", "base", 0.25, []string{
		"The train to London leaves from platform four at noon.",
	}, nil},
	{"es", "ef_dora", "es", "base", 0.25, []string{
		"Hoy hace buen tiempo, así que vamos a caminar al mercado.",
		"Por favor, llámame cuando llegues a la estación.",
	}, nil},
	{"fr-fr", "ff_siwis", "fr", "base", 0.25, []string{
		"Il fait beau aujourd'hui, alors nous allons marcher jusqu'au marché.",
		"Merci de me rappeler quand tu arrives à la gare.",
	}, nil},
	{"hi", "hf_alpha", "ur", "small", 0.25, []string{
		"आज मौसम बहुत अच्छा है।",
		"क्या आप मुझे पानी दे सकते हैं?",
		"मैं घर जा रहा हूँ।",
		"यह किताब बहुत अच्छी है।",
		"आप कैसे हैं?",
		"हम कल बाज़ार जाएंगे।",
	}, []string{
		"آج موسم بہت اچھا ہے",
		"کیا آپ مجھے پانی دے سکتے ہیں؟",
		"میں گھر جا رہا ہوں",
		"یہ کتاب بہت اچھی ہے",
		"آپ کیسے ہیں؟",
		"ہم کل بازار جائیں گے",
	}},
	{"it", "if_sara", "it", "base", 0.25, []string{
		"Oggi fa bel tempo, quindi andiamo a piedi al mercato.",
		"Per favore, chiamami quando arrivi alla stazione.",
	}, nil},
	{"pt-br", "pf_dora", "pt", "base", 0.25, []string{
		"Hoje o tempo está bom, então vamos caminhar até o mercado.",
		"Por favor, me ligue quando chegar na estação.",
	}, nil},
}

// languageCase is one language's row of languageCases.
type languageCase struct {
	lang, voice, whisper string
	judge                string // the Whisper size that transcribes
	maxWER               float64
	sentences            []string
	refs                 []string // what Whisper should write, if not sentences
}

// ref returns what Whisper should write for sentence i.
func (c languageCase) ref(i int) string {
	if c.refs != nil {
		return c.refs[i]
	}
	return c.sentences[i]
}

// languageCaseOf returns the case of the language tagged tag ("fr" and
// "fr-fr" are one language), if there is one.
func languageCaseOf(tag string) (languageCase, bool) {
	want, err := g2p.ParseLang(tag)
	if err != nil {
		return languageCase{}, false
	}
	for _, c := range languageCases {
		if l, err := g2p.ParseLang(c.lang); err == nil && l == want {
			return c, true
		}
	}
	return languageCase{}, false
}

// TestLanguagesRoundTrip speaks each language's sentences with one of its
// voices and has the case's Whisper size transcribe them in that language:
// the word error rate must stay at or below each case's bound.
func TestLanguagesRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Kokoro and Whisper base and small in seven languages; skipped in -short mode")
	}
	rt := loadRoundTrip(t)
	judges := map[string]judge{}
	for _, c := range languageCases {
		if _, ok := judges[c.judge]; !ok {
			judges[c.judge] = rt.openJudge(t, c.judge)
		}
	}
	for _, c := range languageCases {
		t.Run(c.lang, func(t *testing.T) {
			lang, err := g2p.ParseLang(c.lang)
			if err != nil {
				t.Fatal(err)
			}
			if vl, err := g2p.LangOfVoice(c.voice); err != nil || vl != lang {
				t.Fatalf("voice %s speaks %v, %v; want %v", c.voice, vl, err, lang)
			}
			front, err := g2p.NewEspeak(lang)
			if err != nil {
				t.Fatal(err)
			}
			var total wer.Result
			for i, text := range c.sentences {
				heard := judges[c.judge].transcribe(t, rt.speakIn(t, front, c.voice, text), c.whisper)
				r := wer.Compare(c.ref(i), heard)
				total = total.Add(r)
				t.Logf("%s %q → %q (%d/%d errors)", c.voice, text, heard, r.Errors(), r.Words)
			}
			t.Logf("%s (Whisper %s) WER %d/%d = %.1f%%", c.lang, c.judge, total.Errors(), total.Words, 100*total.Rate())
			if total.Rate() > c.maxWER {
				t.Errorf("%s: round-trip WER %.1f%% is above %.0f%%", c.lang, 100*total.Rate(), 100*c.maxWER)
			}
		})
	}
}

// speakIn speaks text with front and a voice (unstreamed) and returns the
// audio at Whisper's 16 kHz.
func (rt *roundTrip) speakIn(t *testing.T, front *g2p.G2P, voiceName, text string) []float32 {
	t.Helper()
	ctx := context.Background()
	voice, err := rt.voices.Voice(voiceName)
	if err != nil {
		t.Fatal(err)
	}
	var audio []float32
	for s, err := range rt.tts.Speak(ctx, (&g2p.Chunker{G2P: front}).ChunkString(ctx, text), voice, 1, 0) {
		if err != nil {
			t.Fatalf("%s %q: %v", voiceName, text, err)
		}
		audio = append(audio, s.Samples...)
	}
	return whisperRate(t, audio)
}

// whisperRate resamples Kokoro's 24 kHz audio to Whisper's 16 kHz.
func whisperRate(t *testing.T, audio []float32) []float32 {
	t.Helper()
	pcm16, err := resample.Resample(audio, kokoro.SampleRate, 16000)
	if err != nil {
		t.Fatal(err)
	}
	return pcm16
}

// judge is a Whisper model that transcribes the round trip, with the
// decoding options of its tokenizer.
type judge struct {
	m    *whisper.Model
	opts decode.TranscribeOptions
}

// openJudge returns Whisper of size on the round trip's engine: base is
// the one loadRoundTrip holds; another size is opened (fetched on first
// use, skipping the test where npm is missing) and closed with the test.
func (rt *roundTrip) openJudge(t *testing.T, size string) judge {
	t.Helper()
	if size == "base" {
		return judge{rt.stt, rt.opts}
	}
	m, err := whisper.Open(context.Background(), rt.eng, size, whisper.F32)
	if errors.Is(err, fetch.ErrNoNpm) || errors.Is(err, weights.ErrNotReady) {
		t.Skipf("SKIP: the round trip needs Whisper %s: run `make models` (%v)", size, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return judge{m, decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))}
}

// transcribe returns what j hears in pcm16 decoding in language lang.
func (j judge) transcribe(t *testing.T, pcm16 []float32, lang string) string {
	t.Helper()
	opts := j.opts
	opts.Language = lang
	tr, err := j.m.Transcribe(context.Background(), pcm16, opts)
	if err != nil {
		t.Fatalf("transcribe (%s): %v", lang, err)
	}
	return tr.Text
}
