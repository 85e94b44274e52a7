package e2e

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/whisper/wer"
)

// languageCases are, per language say speaks, a voice of that language,
// the code Whisper decodes in, and one or two everyday sentences (the
// round trip runs Kokoro and Whisper base on them, so they stay short;
// English has its own round trips beside). Figures:
// reports/2026-11-23-languages.md.
//
// Hindi is heard as Urdu: told "hi", Whisper base writes Hindi speech in
// the Urdu script ("آج موسم بہت اچھا ہے" for "आज मौसम बहुत अच्छा है", the
// same words) or in Latin letters, and in Devanagari (with a Devanagari
// prompt) it garbles it. Everyday Hindi and Urdu are one spoken language,
// so Whisper decodes in Urdu and its words are compared with the same
// sentences written in Urdu script (refs). Whisper base's Urdu still
// merges words ("دیسکتے" for "دے سکتے") and mishears short ones: Hindi's
// bound is 50 %, not the 25 % of the others (figures in the report).
var languageCases = []struct {
	lang, voice, whisper string
	maxWER               float64
	sentences            []string
	refs                 []string // what Whisper should write, if not sentences
}{
	{"en-us", "af_heart", "en", 0.25, []string{
		"Please call me back when you arrive at the station.",
	}, nil},
	{"en-gb", "bf_emma", "en", 0.25, []string{
		"The train to London leaves from platform four at noon.",
	}, nil},
	{"es", "ef_dora", "es", 0.25, []string{
		"Hoy hace buen tiempo, así que vamos a caminar al mercado.",
		"Por favor, llámame cuando llegues a la estación.",
	}, nil},
	{"fr-fr", "ff_siwis", "fr", 0.25, []string{
		"Il fait beau aujourd'hui, alors nous allons marcher jusqu'au marché.",
		"Merci de me rappeler quand tu arrives à la gare.",
	}, nil},
	{"hi", "hf_alpha", "ur", 0.5, []string{
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
	{"it", "if_sara", "it", 0.25, []string{
		"Oggi fa bel tempo, quindi andiamo a piedi al mercato.",
		"Per favore, chiamami quando arrivi alla stazione.",
	}, nil},
	{"pt-br", "pf_dora", "pt", 0.25, []string{
		"Hoje o tempo está bom, então vamos caminhar até o mercado.",
		"Por favor, me ligue quando chegar na estação.",
	}, nil},
}

// TestLanguagesRoundTrip speaks each language's sentences with one of its
// voices and has Whisper base transcribe them in that language: the word
// error rate must stay at or below 25 % per language (Hindi: 50 %, see
// languageCases).
func TestLanguagesRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Kokoro and Whisper base in seven languages; skipped in -short mode")
	}
	rt := loadRoundTrip(t)
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
				heard := rt.sayListenIn(t, front, c.voice, c.whisper, text)
				ref := text
				if c.refs != nil {
					ref = c.refs[i]
				}
				r := wer.Compare(ref, heard)
				total = total.Add(r)
				t.Logf("%s %q → %q (%d/%d errors)", c.voice, text, heard, r.Errors(), r.Words)
			}
			t.Logf("%s WER %d/%d = %.1f%%", c.lang, total.Errors(), total.Words, 100*total.Rate())
			if total.Rate() > c.maxWER {
				t.Errorf("%s: round-trip WER %.1f%% is above %.0f%%", c.lang, 100*total.Rate(), 100*c.maxWER)
			}
		})
	}
}

// sayListenIn speaks text with front and a voice (unstreamed) and returns
// what Whisper base hears decoding in language whisperLang.
func (rt *roundTrip) sayListenIn(t *testing.T, front *g2p.G2P, voiceName, whisperLang, text string) string {
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
	pcm16, err := resample.Resample(audio, kokoro.SampleRate, 16000)
	if err != nil {
		t.Fatal(err)
	}
	opts := rt.opts
	opts.Language = whisperLang
	tr, err := rt.stt.Transcribe(ctx, pcm16, opts)
	if err != nil {
		t.Fatalf("%s %q: transcribe: %v", voiceName, text, err)
	}
	return tr.Text
}
