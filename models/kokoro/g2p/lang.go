package g2p

import (
	"errors"
	"fmt"
	"strings"
)

// Lang is a Kokoro language code: the first letter of every voice name
// (af_heart is 'a', bf_emma is 'b').
type Lang byte

// The languages this front-end phonemises.
const (
	AmericanEnglish Lang = 'a' // espeak-ng voice en-us
	BritishEnglish  Lang = 'b' // espeak-ng voice en (its British English)
)

// ErrLang reports a language this front-end does not handle.
var ErrLang = errors.New("g2p: unsupported language")

// ParseLang accepts a Kokoro code ("a", "b") or a language tag ("en-us",
// "en-gb", "en"), in any case.
func ParseLang(s string) (Lang, error) {
	switch strings.ToLower(strings.ReplaceAll(s, "_", "-")) {
	case "a", "en-us", "us", "american":
		return AmericanEnglish, nil
	case "b", "en-gb", "gb", "en-uk", "uk", "en", "british":
		return BritishEnglish, nil
	}
	return 0, fmt.Errorf("%w: %q (want en-us or en-gb)", ErrLang, s)
}

// LangOfVoice returns the language of a Kokoro voice name such as
// "af_heart" or "bm_george".
func LangOfVoice(voice string) (Lang, error) {
	if len(voice) < 3 || voice[2] != '_' {
		return 0, fmt.Errorf("%w: voice %q is not named like af_heart", ErrLang, voice)
	}
	l := Lang(voice[0])
	if !l.valid() {
		return 0, fmt.Errorf("%w: voice %q (language %q)", ErrLang, voice, voice[:1])
	}
	return l, nil
}

// EspeakVoice is the espeak-ng voice kokoro-js uses for the language.
func (l Lang) EspeakVoice() string {
	if l == BritishEnglish {
		return "en"
	}
	return "en-us"
}

// String returns the language tag, "en-us" or "en-gb".
func (l Lang) String() string {
	switch l {
	case AmericanEnglish:
		return "en-us"
	case BritishEnglish:
		return "en-gb"
	}
	return fmt.Sprintf("Lang(%q)", byte(l))
}

func (l Lang) valid() bool { return l == AmericanEnglish || l == BritishEnglish }
