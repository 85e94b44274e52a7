package g2p

import (
	"errors"
	"fmt"
	"strings"
)

// Lang is a Kokoro language code: the first letter of every voice name
// (af_heart is 'a', bf_emma is 'b', ef_dora is 'e').
type Lang byte

// The languages this front-end phonemises. English follows kokoro-js
// (espeak-ng's IPA rewritten as kokoro-js does, checked against its
// output); the others follow Kokoro's own Python front-end, misaki's
// EspeakG2P (espeak-ng's IPA with ties, affricates and diphthongs mapped
// onto Kokoro's single symbols), with the espeak-ng voice Kokoro's
// KPipeline names for each.
const (
	AmericanEnglish     Lang = 'a' // espeak-ng voice en-us
	BritishEnglish      Lang = 'b' // espeak-ng voice en (its British English)
	Spanish             Lang = 'e' // espeak-ng voice es
	French              Lang = 'f' // espeak-ng voice fr (language fr-fr)
	Hindi               Lang = 'h' // espeak-ng voice hi
	Italian             Lang = 'i' // espeak-ng voice it
	BrazilianPortuguese Lang = 'p' // espeak-ng voice pt-br
)

// Japanese and Mandarin are Kokoro languages this front-end does not
// phonemise: Kokoro reads them through misaki's own G2Ps (pyopenjtalk
// with UniDic for Japanese; jieba, pypinyin and a tone-sandhi port for
// Mandarin), whose output espeak-ng's phonemes do not match, and no
// maintained Go or espeak-ng path produces it.
const (
	Japanese Lang = 'j'
	Mandarin Lang = 'z'
)

// Langs lists the languages this front-end phonemises, in Kokoro's order.
var Langs = []Lang{AmericanEnglish, BritishEnglish, Spanish, French, Hindi, Italian, BrazilianPortuguese}

// ErrLang reports a language this front-end does not handle.
var ErrLang = errors.New("g2p: unsupported language")

// langInfo describes one language.
type langInfo struct {
	tag    string   // the language tag String returns
	espeak string   // the espeak-ng voice
	name   string   // English name
	alias  []string // other spellings ParseLang accepts, lower case
}

// langs describes every Kokoro language; Japanese and Mandarin carry no
// espeak voice.
var langs = map[Lang]langInfo{
	AmericanEnglish:     {"en-us", "en-us", "American English", []string{"us", "american", "american english"}},
	BritishEnglish:      {"en-gb", "en", "British English", []string{"en", "gb", "en-uk", "uk", "british", "british english"}},
	Spanish:             {"es", "es", "Spanish", []string{"es-es", "spanish"}},
	French:              {"fr-fr", "fr", "French", []string{"fr", "french"}},
	Hindi:               {"hi", "hi", "Hindi", []string{"hi-in", "hindi"}},
	Italian:             {"it", "it", "Italian", []string{"it-it", "italian"}},
	BrazilianPortuguese: {"pt-br", "pt-br", "Brazilian Portuguese", []string{"brazilian portuguese"}},
	Japanese:            {tag: "ja", name: "Japanese", alias: []string{"japanese"}},
	Mandarin:            {tag: "cmn", name: "Mandarin Chinese", alias: []string{"zh", "zh-cn", "mandarin", "chinese"}},
}

// ParseLang accepts a Kokoro code ("a", "e"), an espeak-ng language code
// or tag ("en-us", "en-gb", "en", "es", "fr", "fr-fr", "hi", "it",
// "pt-br") or an English name ("french"), in any case, with _ for -.
// Japanese and Mandarin are refused with ErrLang saying why.
func ParseLang(s string) (Lang, error) {
	key := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "_", "-"))
	for l, info := range langs {
		if key == "" {
			break
		}
		if key == string(rune(l)) || key == info.tag || (info.espeak != "" && key == info.espeak) {
			return l.check(s)
		}
		for _, a := range info.alias {
			if key == a {
				return l.check(s)
			}
		}
	}
	return 0, fmt.Errorf("%w: %q (want one of %s)", ErrLang, s, strings.Join(LangTags(), ", "))
}

// check returns l if this front-end phonemises it, else ErrLang naming
// what s asked for and why it is missing.
func (l Lang) check(s string) (Lang, error) {
	if l.valid() {
		return l, nil
	}
	return 0, fmt.Errorf("%w: %q: %s", ErrLang, s, l.Unsupported())
}

// LangTags returns the tags of the languages this front-end phonemises.
func LangTags() []string {
	tags := make([]string, len(Langs))
	for i, l := range Langs {
		tags[i] = l.String()
	}
	return tags
}

// LangOfVoice returns the language of a Kokoro voice name such as
// "af_heart", "bm_george" or "ef_dora". A Japanese or Mandarin voice
// (jf_…, zf_…) is an ErrLang saying why.
func LangOfVoice(voice string) (Lang, error) {
	if len(voice) < 3 || voice[2] != '_' {
		return 0, fmt.Errorf("%w: voice %q is not named like af_heart", ErrLang, voice)
	}
	l := Lang(voice[0])
	if _, known := langs[l]; !known {
		return 0, fmt.Errorf("%w: voice %q (language %q)", ErrLang, voice, voice[:1])
	}
	return l.check("voice " + voice)
}

// EspeakVoice is the espeak-ng voice the language is phonemised with:
// kokoro-js's for English, Kokoro's KPipeline's for the others.
func (l Lang) EspeakVoice() string { return langs[l].espeak }

// English reports whether the language is American or British English,
// which follow kokoro-js rather than misaki.
func (l Lang) English() bool { return l == AmericanEnglish || l == BritishEnglish }

// Name returns the language's English name ("Brazilian Portuguese").
func (l Lang) Name() string {
	if info, ok := langs[l]; ok {
		return info.name
	}
	return l.String()
}

// Unsupported says why the language is not phonemised, or "" if it is.
func (l Lang) Unsupported() string {
	switch {
	case l.valid():
		return ""
	case l == Japanese || l == Mandarin:
		return l.Name() + " needs its own G2P (Kokoro uses misaki's: pyopenjtalk for Japanese, pypinyin and jieba for Mandarin), which has no maintained Go or espeak-ng equivalent"
	}
	return "not a Kokoro language"
}

// String returns the language tag: "en-us", "en-gb", "es", "fr-fr",
// "hi", "it" or "pt-br" ("ja", "cmn" for the two not phonemised).
func (l Lang) String() string {
	if info, ok := langs[l]; ok {
		return info.tag
	}
	return fmt.Sprintf("Lang(%q)", byte(l))
}

func (l Lang) valid() bool { return langs[l].espeak != "" }
