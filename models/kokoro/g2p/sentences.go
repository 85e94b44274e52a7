package g2p

import (
	"strings"
)

// sentenceSplitter cuts a growing buffer of text into sentences the way
// kokoro-js 1.2.1's TextSplitterStream does, so that a stream synthesised
// here starts and ends its utterances where kokoro-js's stream() would.
//
// A sentence ends at . ! ? … (or their CJK forms, or a newline) outside
// quotes and brackets, together with any further terminators and closing
// quotes or brackets, when whitespace follows — except after a number at
// the start of a line ("1."), an abbreviation ("Dr.", "etc."), initials
// before a capital ("J. R. Smith"), a period before a lower-case word, a
// URL or e-mail address, or a bare ellipsis. A boundary whose following
// text, or the end of whose word, is not yet in the buffer is decided
// only once more text arrives (or at Close), so text pushed in pieces
// splits exactly as the same text pushed whole.
//
// JavaScript indexes strings by UTF-16 code unit; the splitter works on
// runes, which gives the same cuts because every character it inspects
// is in the Basic Multilingual Plane.
type sentenceSplitter struct {
	buf []rune
}

// push appends text and returns the sentences it completes.
func (s *sentenceSplitter) push(text string, emit func(string)) {
	s.buf = append(s.buf, []rune(text)...)
	s.process(emit)
}

// flush returns what is left in the buffer as a last sentence (trimmed;
// nothing when blank) and empties the buffer.
func (s *sentenceSplitter) flush(emit func(string)) {
	if rest := jsTrim(string(s.buf)); rest != "" {
		emit(rest)
	}
	s.buf = s.buf[:0]
}

// pending returns how many runes wait in the buffer.
func (s *sentenceSplitter) pending() int { return len(s.buf) }

// process is TextSplitterStream._process: it rescans the buffer from its
// start (with an empty bracket stack), emits every complete sentence and
// keeps the unfinished rest.
func (s *sentenceSplitter) process(emit func(string)) {
	a := s.buf
	n := len(a)
	start := 0
	var stack []rune
	for i := 0; i < n; {
		c := a[i]
		updateStack(c, &stack, i, a)
		if len(stack) != 0 || !isTerminator(c, true) {
			i++
			continue
		}
		if numberedListItem(a[start:i]) {
			i++
			continue
		}
		end, next := scanBoundary(a, i)
		if i == next-1 && c != '\n' {
			i++
			continue
		}
		if next == n {
			break
		}
		ws := i - 1
		for ws >= 0 && !jsSpace(a[ws]) {
			ws--
		}
		ws = max(start, ws+1)
		word := wordAt(a, ws)
		if len(word) == 0 {
			i++
			continue
		}
		if ws+len(word) == n {
			// The word holding the boundary ("!!0…") runs to the end of
			// the buffer, so whether it is an address or an abbreviation
			// is not known yet: wait for its end, or for Close, which
			// keeps it in the last sentence. Deciding now on a partial
			// word would cut text pushed in pieces where the whole text
			// is not cut.
			break
		}
		if (looksLikeURL(word) || strings.ContainsRune(string(word), '@')) && !isTerminator(word[len(word)-1], true) {
			// Skip past the address. kokoro-js sets i to exactly this end,
			// which never advances when the terminator is a newline right
			// after the address, and then loops for ever; step on instead.
			i = max(i+1, ws+len(word))
			continue
		}
		if isAbbreviation(string(word)) {
			i++
			continue
		}
		if isInitials(word) && next < n && isUpperASCII(a[next]) {
			i++
			continue
		}
		if c == '.' && next < n && a[next] >= 'a' && a[next] <= 'z' {
			i++
			continue
		}
		sentence := jsTrim(string(a[start : end+1]))
		if sentence == "..." || sentence == "…" {
			i++
			continue
		}
		if sentence != "" {
			emit(sentence)
		}
		start = end + 1
		i = start
	}
	s.buf = append(s.buf[:0], a[start:]...)
}

// isTerminator reports whether c ends a sentence: . ! ? … , the CJK
// 。？！ and the Devanagari danda । (Hindi's full stop; not in
// kokoro-js, which speaks English only), and a newline when newlines
// count.
func isTerminator(c rune, newlines bool) bool {
	switch c {
	case '.', '!', '?', '…', '。', '？', '！', '।':
		return true
	case '\n':
		return newlines
	}
	return false
}

// scanBoundary extends the terminator at i over further terminators and
// then closing quotes and brackets; it returns the last index of the
// boundary and the index of the next non-whitespace character after it.
func scanBoundary(a []rune, i int) (end, next int) {
	end = i
	for end+1 < len(a) && isTerminator(a[end+1], false) {
		end++
	}
	for end+1 < len(a) && strings.ContainsRune("\"')]}」』", a[end+1]) {
		end++
	}
	next = end + 1
	for next < len(a) && jsSpace(a[next]) {
		next++
	}
	return end, next
}

// numberedListItem is /(^|\n)\d+$/: the text before the terminator ends
// in a run of digits that starts a line, as in "2. Second item".
func numberedListItem(before []rune) bool {
	j := len(before)
	for j > 0 && before[j-1] >= '0' && before[j-1] <= '9' {
		j--
	}
	return j < len(before) && (j == 0 || before[j-1] == '\n')
}

// wordAt returns the run of non-whitespace starting at i.
func wordAt(a []rune, i int) []rune {
	j := i
	for j < len(a) && !jsSpace(a[j]) {
		j++
	}
	return a[i:j]
}

// looksLikeURL is /https?[,:]\/\//.
func looksLikeURL(word []rune) bool {
	s := string(word)
	for _, p := range [...]string{"http://", "https://", "http,//", "https,//"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// abbreviations are the words kokoro-js never ends a sentence after.
var abbreviations = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`mr mrs ms dr prof sr jr sgt col gen rep sen gov lt maj capt st mt
		etc co inc ltd dept vs p pg jan feb mar apr jun jul aug sep sept oct nov dec
		sun mon tu tue tues wed th thu thur thurs fri sat`) {
		abbreviations[w] = true
	}
}

// isAbbreviation strips a trailing 's or ’s and trailing periods and
// looks the word up, ignoring case.
func isAbbreviation(word string) bool {
	for _, suf := range [...]string{"'s", "'S", "’s", "’S"} {
		if strings.HasSuffix(word, suf) {
			word = word[:len(word)-len(suf)]
			break
		}
	}
	word = strings.TrimRight(word, ".")
	if strings.ContainsRune(word, 'İ') {
		// JavaScript lower-cases İ to two characters (i and a combining
		// dot), so a word holding it never matches; Go's ToLower gives i.
		return false
	}
	return abbreviations[strings.ToLower(word)]
}

// isInitials is /^([A-Za-z]\.)+$/.
func isInitials(word []rune) bool {
	if len(word) == 0 || len(word)%2 != 0 {
		return false
	}
	for i := 0; i < len(word); i += 2 {
		c := word[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') || word[i+1] != '.' {
			return false
		}
	}
	return true
}

func isUpperASCII(c rune) bool { return c >= 'A' && c <= 'Z' }

// closers maps each closing bracket kokoro-js tracks to its opener.
var closers = map[rune]rune{
	')': '(', ']': '[', '}': '{',
	'\u300b': '\u300a', // 》《
	'\u3009': '\u3008', // 〉〈 (CJK)
	'\u232a': '\u2329', // 〉〈 (technical)
	'\u203a': '\u2039', // ›‹
	'\u00bb': '\u00ab', // »«
	'\u300d': '\u300c', // 」「
	'\u300f': '\u300e', // 』『
	'\u3015': '\u3014', // 〕〔
	'\u3011': '\u3010', // 】【
}

// isOpener reports whether c opens a bracket kokoro-js tracks (an opener
// of closers, listed here because the splitter asks for every character
// of its buffer on every push).
func isOpener(c rune) bool {
	switch c {
	case '(', '[', '{', '\u300a', '\u3008', '\u2329', '\u2039', '\u00ab', '\u300c', '\u300e', '\u3014', '\u3010':
		return true
	}
	return false
}

// updateStack tracks open quotes and brackets: a quote toggles (an
// apostrophe between two ASCII letters is not a quote), an opener pushes,
// a closer pops its opener.
func updateStack(c rune, stack *[]rune, i int, a []rune) {
	st := *stack
	switch {
	case c == '"' || c == '\'':
		if c == '\'' && i > 0 && i < len(a)-1 && isASCIILetter(a[i-1]) && isASCIILetter(a[i+1]) {
			return
		}
		if len(st) > 0 && st[len(st)-1] == c {
			st = st[:len(st)-1]
		} else {
			st = append(st, c)
		}
	case isOpener(c):
		st = append(st, c)
	default:
		if open, ok := closers[c]; ok && len(st) > 0 && st[len(st)-1] == open {
			st = st[:len(st)-1]
		}
	}
	*stack = st
}

func isASCIILetter(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
