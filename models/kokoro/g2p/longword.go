package g2p

import (
	"strings"
	"unicode"
)

// word is one whitespace-free unit the chunker packs into chunks: a word
// of the text, or a piece of a word too long for a chunk of its own.
type word struct {
	text  string // the source text, as Chunk.Text shows it
	of    string // the word of the text this piece was cut from; "" for a whole word
	spell bool   // read character by character: a group of a hex or digit string
	pause bool   // read with a comma after it: a group that more of its string follows
}

// Groups and pieces of long words.
const (
	// hexGroup is how many characters of a hex string (a commit hash, a
	// key) are read together: "3f78, 6850, e387", as people read them.
	hexGroup = 4
	// digitGroup is how many digits of a long digit string are read
	// together: "123, 456, 789", digit by digit, as people read long
	// numbers out (espeak-ng would say "one hundred twenty-three
	// octillion …").
	digitGroup = 3
	// maxLetters is the longest piece a run of letters with nothing else
	// to cut at (a chemical name, words run together) is cut into.
	maxLetters = 12
)

// spoken returns the text the G2P reads for w.
func (w word) spoken() string {
	if !w.spell {
		return w.text
	}
	var b strings.Builder
	for _, r := range w.text {
		if !isAlnum(r) {
			b.WriteRune(r) // the punctuation after a string: "1 b."
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		switch r = unicode.ToLower(r); r {
		case 'a':
			// espeak-ng reads a lone "a" as the article (ɐ); "eh" is
			// the letter's name (eɪ) in both English voices.
			b.WriteString("eh")
		default:
			b.WriteRune(r)
		}
	}
	if w.pause {
		b.WriteByte(',')
	}
	return b.String()
}

// source returns the word of the text w was cut from.
func (w word) source() string {
	if w.of != "" {
		return w.of
	}
	return w.text
}

// pieces cuts a word too long for a chunk of its own into shorter ones,
// with the coarsest cut that applies:
//
//  1. after punctuation and symbols ("2-(4-isobutylphenyl)…", URLs), and
//     where letters meet digits or a capital follows a lower-case letter
//     ("fooBar"), a hex string being one piece;
//  2. a hex string (hex digits with at least one decimal digit, and
//     the punctuation after it) into spelled groups of hexGroup
//     characters, a digit string into groups of digitGroup digits;
//  3. a run of letters (and the punctuation after it) into pieces of at
//     most maxLetters, cut between syllables where it can;
//  4. anything else, a spelled group among them, into halves.
//
// Each piece is shorter than w or, when one group is all there is, w
// spelled: cutting again always ends. A single character cannot be cut:
// pieces returns nil.
func (w word) pieces() []word {
	rs := []rune(w.text)
	if len(rs) <= 1 {
		return nil
	}
	of := w.source()
	if !w.spell {
		if segs := segments(rs); len(segs) > 1 {
			out := make([]word, len(segs))
			for i, s := range segs {
				out[i] = word{text: s, of: of}
			}
			return out
		}
		// One run of letters or digits, perhaps with punctuation after
		// it, which stays with its last piece ("…001b.").
		core := len(rs)
		for core > 0 && !isAlnum(rs[core-1]) {
			core--
		}
		var p []word
		if hex, digits := hexString(rs[:core]); hex {
			size := hexGroup
			if digits {
				size = digitGroup
			}
			p = groups(rs[:core], size, w.pause, of)
		} else if core > maxLetters && allLetters(rs[:core]) {
			p = syllables(rs[:core], of)
		}
		if p != nil {
			p[len(p)-1].text += string(rs[core:])
			return p
		}
	}
	mid := len(rs) / 2
	return []word{
		{text: string(rs[:mid]), of: of, spell: w.spell},
		{text: string(rs[mid:]), of: of, spell: w.spell, pause: w.pause},
	}
}

// segments cuts a word before each letter or digit that follows a
// character of neither kind, between letters and digits, and before a
// capital that follows a lower-case letter. A run of letters and digits
// that is a hex string stays whole, to be read in groups.
func segments(rs []rune) []string {
	var out []string
	start := 0
	cut := func(i int) {
		if i > start {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	for i := 0; i < len(rs); {
		if !isAlnum(rs[i]) {
			i++
			continue
		}
		if i > 0 {
			cut(i)
		}
		j := i
		for j < len(rs) && isAlnum(rs[j]) {
			j++
		}
		if hex, _ := hexString(rs[i:j]); !hex {
			for k := i + 1; k < j; k++ {
				prev, r := rs[k-1], rs[k]
				if isLetterRune(prev) != isLetterRune(r) || unicode.IsLower(prev) && unicode.IsUpper(r) {
					cut(k)
				}
			}
		}
		i = j
	}
	cut(len(rs))
	return out
}

// hexString reports whether rs is all hex digits with at least one
// decimal digit among them, and whether it is all decimal digits.
func hexString(rs []rune) (hex, digits bool) {
	digits = true
	anyDigit := false
	for _, r := range rs {
		switch {
		case r >= '0' && r <= '9':
			anyDigit = true
		case r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F':
			digits = false
		default:
			return false, false
		}
	}
	return anyDigit, digits && anyDigit
}

// groups cuts rs into spelled groups of size characters, each but the
// last read with a pause after it; the last keeps the pause of the word
// it ends.
func groups(rs []rune, size int, pause bool, of string) []word {
	out := make([]word, 0, (len(rs)+size-1)/size)
	for i := 0; i < len(rs); i += size {
		end := min(i+size, len(rs))
		out = append(out, word{text: string(rs[i:end]), of: of, spell: true, pause: end < len(rs) || pause})
	}
	return out
}

// syllables cuts a run of letters into pieces of at most maxLetters,
// each cut placed, in order of preference, inside a cluster of
// consonants after a vowel ("methionyl|threonyl"), before a consonant
// between vowels ("po|ly"), or at maxLetters; the longest piece of the
// best kind wins.
func syllables(rs []rune, of string) []word {
	var out []word
	for start := 0; start < len(rs); {
		end := len(rs)
		if end-start > maxLetters {
			end = start + maxLetters
			best := 0
			for k := start + maxLetters; k >= start+maxLetters/2 && best < 2; k-- {
				v1, c0, c1 := isVowel(rs[k-2]), !isVowel(rs[k-1]), !isVowel(rs[k])
				switch {
				case v1 && c0 && c1:
					end, best = k, 2
				case best == 0 && !c0 && c1 && k+1 < len(rs) && isVowel(rs[k+1]):
					end, best = k, 1
				}
			}
		}
		out = append(out, word{text: string(rs[start:end]), of: of})
		start = end
	}
	return out
}

// isAlnum reports whether r is a letter, a combining mark or a digit.
func isAlnum(r rune) bool { return isLetterRune(r) || unicode.IsDigit(r) }

// isLetterRune reports whether r is a letter or a mark that combines with
// one.
func isLetterRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsMark(r) }

// allLetters reports whether every rune of rs is a letter or mark.
func allLetters(rs []rune) bool {
	for _, r := range rs {
		if !isLetterRune(r) {
			return false
		}
	}
	return true
}

// isVowel reports whether r is an English vowel letter (y included).
func isVowel(r rune) bool {
	switch unicode.ToLower(r) {
	case 'a', 'e', 'i', 'o', 'u', 'y':
		return true
	}
	return false
}
