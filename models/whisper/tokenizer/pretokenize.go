package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The GPT-2 pre-tokenizer splits text with
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// The pattern matches every rune, so the pieces tile the text. The
// alternatives are tried in order at each position and the first that
// matches wins; pieceEnd reproduces that by hand. \s is Unicode White_Space
// (as in Oniguruma, which Hugging Face tokenizers use), \p{L} and \p{N} are
// the general categories.

// runeClass is the class of a rune as the pattern sees it.
type runeClass uint8

const (
	classOther runeClass = iota // [^\s\p{L}\p{N}]
	classLetter
	classNumber
	classSpace
)

func classOf(r rune) runeClass {
	switch {
	case r < utf8.RuneSelf:
		return asciiClass[r]
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

var asciiClass = func() (t [utf8.RuneSelf]runeClass) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
			t[r] = classLetter
		case '0' <= r && r <= '9':
			t[r] = classNumber
		case r == ' ', '\t' <= r && r <= '\r':
			t[r] = classSpace
		}
	}
	return t
}()

// pieceEnd returns the end of the piece that starts at s[i:], i < len(s).
// s must be valid UTF-8.
func pieceEnd(s string, i int) int {
	r, n := utf8.DecodeRuneInString(s[i:])

	// 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
	if r == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}

	// " ?" before a letter, number or other run.
	start := i
	class := classOf(r)
	if r == ' ' && i+1 < len(s) {
		r2, n2 := utf8.DecodeRuneInString(s[i+1:])
		if c2 := classOf(r2); c2 != classSpace {
			start, class, n = i+1, c2, n2
		}
	}
	if class != classSpace {
		return runEnd(s, start+n, class)
	}

	// \s+(?!\S) takes a whitespace run up to the end of the text, or all of
	// it but its last rune when a non-space follows; a single whitespace
	// rune before a non-space falls through to \s+.
	end := runEnd(s, i+n, classSpace)
	if end == len(s) {
		return end
	}
	_, last := utf8.DecodeLastRuneInString(s[:end])
	if end-last > i {
		return end - last
	}
	return end
}

// runEnd extends a run of runes of the given class that continues at s[j:].
func runEnd(s string, j int, class runeClass) int {
	for j < len(s) {
		r, n := utf8.DecodeRuneInString(s[j:])
		if classOf(r) != class {
			break
		}
		j += n
	}
	return j
}
