package say

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/weights"
)

func TestVoiceInfo(t *testing.T) {
	for _, c := range []struct {
		name string
		want VoiceInfo
		ok   bool
	}{
		{"af_heart", VoiceInfo{"af_heart", "en-us", "American English", "female"}, true},
		{"bm_george", VoiceInfo{"bm_george", "en-gb", "British English", "male"}, true},
		{"ef_dora", VoiceInfo{"ef_dora", "es", "Spanish", "female"}, true},
		{"ff_siwis", VoiceInfo{"ff_siwis", "fr-fr", "French", "female"}, true},
		{"hm_omega", VoiceInfo{"hm_omega", "hi", "Hindi", "male"}, true},
		{"im_nicola", VoiceInfo{"im_nicola", "it", "Italian", "male"}, true},
		{"pf_dora", VoiceInfo{"pf_dora", "pt-br", "Brazilian Portuguese", "female"}, true},
		{"jf_alpha", VoiceInfo{}, false},
		{"zm_yunxi", VoiceInfo{}, false},
		{"odd", VoiceInfo{}, false},
	} {
		if got, ok := voiceInfo(c.name); ok != c.ok || got != c.want {
			t.Errorf("voiceInfo(%q) = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if u := Unlisted(); !strings.Contains(u, "Japanese") || !strings.Contains(u, "Mandarin") || !strings.Contains(u, "G2P") {
		t.Errorf("Unlisted() = %q: want the two languages named and why", u)
	}
}

// TestListVoices: every voice of the artifact in a language this package
// speaks is listed, none other; Kokoro v1.0 has 54 voices, 13 of them
// Japanese or Mandarin.
func TestListVoices(t *testing.T) {
	a, err := weights.Open(weights.KokoroVoices)
	if err != nil {
		t.Skipf("SKIP: %s not in the model cache: run `make models` (%v)", weights.KokoroVoices, err)
	}
	a.Close()
	list, err := ListVoices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	langs := map[string]int{}
	for _, v := range list {
		langs[v.Lang]++
		if _, err := g2p.ParseLang(v.Lang); err != nil || v.Gender == "" {
			t.Errorf("%+v: language %v, gender %q", v, err, v.Gender)
		}
	}
	if len(list) != 41 || len(langs) != 7 {
		t.Errorf("%d voices in %d languages (%v), want 41 in 7", len(list), len(langs), langs)
	}
}

func TestPhonemize(t *testing.T) {
	if _, err := g2p.NewEspeak(g2p.AmericanEnglish); err != nil {
		t.Skipf("SKIP: espeak-ng unavailable: %v", err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		text string
		o    Options
		want []string // phonemes per chunk
		err  error
	}{
		{"default voice", "Hello world. Bye.", Options{}, []string{"həlˈoʊ wˈɜːld.", "bˈaɪ."}, nil},
		{"voice's language", "Hola.", Options{Voice: "ef_dora"}, []string{"ˈola."}, nil},
		{"mix: the first voice's", "Hola.", Options{Voice: "ef_dora:0.5,af_heart"}, []string{"ˈola."}, nil},
		{"lang over voice", "Ciao.", Options{Voice: "af_heart", Lang: "it"}, []string{"ʧˈao."}, nil},
		{"japanese", "Hi.", Options{Voice: "jf_alpha"}, nil, g2p.ErrLang},
		{"bad lang", "Hi.", Options{Lang: "xx"}, nil, g2p.ErrLang},
		{"blank", "  ", Options{}, nil, ErrNoSpeech},
		{"max tokens", "Hi.", Options{MaxTokens: 9}, nil, ErrBadOptions},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			err := Phonemize(ctx, String(c.text), c.o, func(_, ph string) error {
				got = append(got, ph)
				return nil
			})
			if !errors.Is(err, c.err) || strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("Phonemize(%q, %+v) = %q, %v; want %q, %v", c.text, c.o, got, err, c.want, c.err)
			}
		})
	}
}
