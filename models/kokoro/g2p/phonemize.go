package g2p

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tensorforge/forge/models/kokoro/espeak"
)

// ErrInvalidUTF8 reports text that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("g2p: text is not valid UTF-8")

// Backend turns a piece of text into IPA with an espeak-ng voice, one
// string per clause, as the phonemizer npm package does.
// *espeak.Engine is the real one.
type Backend interface {
	Phonemize(text, voice string) ([]string, error)
}

// TiedBackend is a Backend that also writes multi-letter phonemes with a
// tie between their letters ("t^ʃ"), as misaki reads them for Kokoro's
// languages other than English. *espeak.Engine is one.
type TiedBackend interface {
	Backend
	PhonemizeTied(text, voice string, tie rune) ([]string, error)
}

// G2P converts text into the phoneme strings Kokoro-82M reads. For
// English it reproduces kokoro-js 1.2.1's phonemize(text, lang) exactly
// when its backend is the same espeak-ng; for Spanish, French, Hindi,
// Italian and Brazilian Portuguese it follows misaki's EspeakG2P, the
// front-end of Kokoro's own Python pipeline (kokoro-js speaks English
// only). It holds no state of its own, so one G2P
// may serve many goroutines (the backend serialises its calls).
type G2P struct {
	backend Backend
	lang    Lang
}

// New returns a G2P for lang that phonemises through backend.
func New(backend Backend, lang Lang) (*G2P, error) {
	if backend == nil {
		return nil, errors.New("g2p: nil backend")
	}
	if !lang.valid() {
		return nil, fmt.Errorf("%w: %v", ErrLang, lang)
	}
	if _, tied := backend.(TiedBackend); !tied && !lang.English() {
		return nil, fmt.Errorf("%w: %s needs a backend that writes phoneme ties", ErrLang, lang.Name())
	}
	return &G2P{backend: backend, lang: lang}, nil
}

// NewEspeak returns a G2P for lang on the process's espeak-ng engine,
// loading the library on first use. A missing library is an error that
// names the package to install.
func NewEspeak(lang Lang) (*G2P, error) {
	e, err := espeak.Default()
	if err != nil {
		return nil, err
	}
	return New(e, lang)
}

// Lang returns the language the G2P phonemises.
func (g *G2P) Lang() Lang { return g.lang }

// Phonemize converts text into a Kokoro phoneme string. For English:
//
//  1. Normalize the text (quotes, titles, years, times, money, decimals).
//  2. Split it into runs of punctuation (;:,.!?¡¿—…"«»“”(){}[] with the
//     spaces around them), which are kept verbatim, and the text between
//     them, which espeak-ng phonemises (clauses joined by a space).
//  3. Join the pieces and rewrite the IPA the way Kokoro was trained on
//     (see postProcess).
//
// The other languages skip the English rules of Normalize (espeak-ng
// reads numbers, dates and titles in the language itself): their text
// has kokoro-js's character mapping alone, is split the same way, and
// espeak-ng's tied IPA is rewritten as misaki does (see misakiPostProcess).
//
// Empty text gives an empty string; text of punctuation alone gives that
// punctuation. Invalid UTF-8 is an error wrapping ErrInvalidUTF8.
func (g *G2P) Phonemize(text string) (string, error) {
	if !utf8.ValidString(text) {
		return "", ErrInvalidUTF8
	}
	english := g.lang.English()
	var s string
	if english {
		s = Normalize(text)
	} else {
		s = jsTrim(dropSpacesBetweenNewlines(mapChars(text)))
	}
	var b strings.Builder
	b.Grow(2 * len(s))
	var err error
	splitPunct(s, func(piece string, punct bool) bool {
		if punct {
			b.WriteString(piece)
			return true
		}
		var clauses []string
		if english {
			clauses, err = g.backend.Phonemize(piece, g.lang.EspeakVoice())
		} else {
			clauses, err = g.backend.(TiedBackend).PhonemizeTied(piece, g.lang.EspeakVoice(), tie)
		}
		if err != nil {
			err = fmt.Errorf("g2p: phonemising %q: %w", piece, err)
			return false
		}
		for i, c := range clauses {
			if i > 0 {
				b.WriteByte(' ')
			}
			if !english {
				c = removeLangFlags(c)
			}
			b.WriteString(c)
		}
		return true
	})
	if err != nil {
		return "", err
	}
	if !english {
		return misakiPostProcess(b.String()), nil
	}
	return postProcess(b.String(), g.lang), nil
}

// tie joins the letters of a multi-letter phoneme in the IPA of the
// languages other than English, as misaki asks phonemizer for it.
const tie = '^'

// misakiReplacer is misaki's EspeakG2P.E2M: espeak-ng's tied affricates
// and diphthongs become the single symbols Kokoro was trained with.
var misakiReplacer = strings.NewReplacer(
	"a^ɪ", "I", "a^ʊ", "W",
	"d^z", "ʣ", "d^ʒ", "ʤ",
	"e^ɪ", "A",
	"o^ʊ", "O", "ə^ʊ", "Q",
	"s^s", "S",
	"t^s", "ʦ", "t^ʃ", "ʧ",
	"ɔ^ɪ", "Y",
)

// misakiPostProcess rewrites espeak-ng's tied IPA (its language-switch
// flags already removed) as misaki's EspeakG2P does: the tied pairs
// become single symbols; the remaining ties and hyphens are deleted; the
// «» that kokoro-js's character mapping made of parentheses become
// parentheses again; surrounding whitespace is trimmed.
func misakiPostProcess(s string) string {
	s = misakiReplacer.Replace(s)
	s = strings.NewReplacer("^", "", "-", "", "«", "(", "»", ")").Replace(s)
	return jsTrim(s)
}

// removeLangFlags deletes the language-switch flags from one clause of
// espeak-ng's IPA ("(en)wˈiːkɛnd(fr)": a word it reads as English), as
// phonemizer's language_switch="remove-flags" does: in espeak-ng's output
// a parenthesis can be nothing else, since the text's own parentheses
// never reach it (they are punctuation pieces).
func removeLangFlags(s string) string {
	for {
		i := strings.IndexByte(s, '(')
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], ')')
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+1:]
	}
}

// isPunct reports whether r is one of the punctuation marks kokoro-js
// keeps verbatim instead of sending to espeak-ng.
func isPunct(r rune) bool {
	switch r {
	case ';', ':', ',', '.', '!', '?', '¡', '¿', '—', '…', '"', '«', '»', '“', '”', '(', ')', '{', '}', '[', ']':
		return true
	}
	return false
}

// splitPunct cuts s the way kokoro-js's
// /(\s*[;:,.!?¡¿—…"«»“”(){}[\]]+\s*)+/g does: every maximal run of
// whitespace and punctuation that holds at least one punctuation mark is
// a punctuation piece; the text between is a text piece. Runs of only
// whitespace stay inside text pieces. yield is called in order and stops
// the walk by returning false.
func splitPunct(s string, yield func(piece string, punct bool) bool) {
	textStart := 0 // start of the pending text piece
	runStart := -1 // start of the current whitespace/punctuation run
	hasPunct := false
	flush := func(end int) bool {
		if runStart < 0 {
			return true
		}
		ok := true
		if hasPunct {
			if runStart > textStart {
				ok = yield(s[textStart:runStart], false)
			}
			if ok {
				ok = yield(s[runStart:end], true)
			}
			textStart = end
		}
		runStart, hasPunct = -1, false
		return ok
	}
	for i, r := range s {
		p := isPunct(r)
		if p || jsSpace(r) {
			if runStart < 0 {
				runStart = i
			}
			hasPunct = hasPunct || p
			continue
		}
		if !flush(i) {
			return
		}
	}
	if !flush(len(s)) {
		return
	}
	if textStart < len(s) {
		yield(s[textStart:], false)
	}
}

// postProcess applies kokoro-js's rewrites to the joined IPA:
//
//   - the espeak reading of "Kokoro" becomes the name's own (kˈoʊkəɹoʊ);
//   - ʲ → j, r → ɹ, x → k, ɬ → l (symbols the model never saw);
//   - a space before "hˈʌndɹɪd" glued to a preceding number;
//   - " z" before punctuation, a space or the end becomes "z" (espeak's
//     reading of a lone 's, as in "CD'S");
//   - for American English, nˈaɪnti → nˈaɪndi (flapped "ninety");
//   - surrounding whitespace trimmed.
func postProcess(s string, lang Lang) string {
	s = strings.ReplaceAll(s, "kəkˈoːɹoʊ", "kˈoʊkəɹoʊ")
	s = strings.ReplaceAll(s, "kəkˈɔːɹəʊ", "kˈəʊkəɹəʊ")
	s = symbolReplacer.Replace(s)
	s = spaceBeforeHundred(s)
	s = joinLoneZ(s)
	if lang == AmericanEnglish {
		s = flapNinety(s)
	}
	return jsTrim(s)
}

// symbolReplacer maps IPA symbols outside Kokoro's vocabulary to the
// ones it was trained with.
var symbolReplacer = strings.NewReplacer("ʲ", "j", "r", "ɹ", "x", "k", "ɬ", "l")

// spaceBeforeHundred is /(?<=[a-zɹː])(?=hˈʌndɹɪd)/g → " ".
func spaceBeforeHundred(s string) string {
	const hundred = "hˈʌndɹɪd"
	if !strings.Contains(s, hundred) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(s[i:], hundred)
		if j < 0 {
			break
		}
		at := i + j
		if r, _ := utf8.DecodeLastRuneInString(s[:at]); (r >= 'a' && r <= 'z') || r == 'ɹ' || r == 'ː' {
			b.WriteString(s[last:at])
			b.WriteByte(' ')
			last = at
		}
		i = at + len(hundred)
	}
	b.WriteString(s[last:])
	return b.String()
}

// joinLoneZ is / z(?=[;:,.!?¡¿—…"«»“” ]|$)/g → "z".
func joinLoneZ(s string) string {
	if !strings.Contains(s, " z") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != ' ' || s[i+1] != 'z' {
			continue
		}
		if next, _ := utf8.DecodeRuneInString(s[i+2:]); i+2 == len(s) || endsLoneZ(next) {
			b.WriteString(s[last:i])
			b.WriteByte('z')
			i++
			last = i + 1
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// endsLoneZ is the lookahead class of joinLoneZ: [;:,.!?¡¿—…"«»“” ].
func endsLoneZ(r rune) bool {
	switch r {
	case ';', ':', ',', '.', '!', '?', '¡', '¿', '—', '…', '"', '«', '»', '“', '”', ' ':
		return true
	}
	return false
}

// flapNinety is /(?<=nˈaɪn)ti(?!ː)/g → "di".
func flapNinety(s string) string {
	const nine = "nˈaɪn"
	if !strings.Contains(s, nine+"ti") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(s[i:], nine+"ti")
		if j < 0 {
			break
		}
		at := i + j + len(nine) // the "ti"
		if !strings.HasPrefix(s[at+2:], "ː") {
			b.WriteString(s[last:at])
			b.WriteString("di")
			last = at + 2
		}
		i = at + 2
	}
	b.WriteString(s[last:])
	return b.String()
}
