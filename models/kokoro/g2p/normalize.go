package g2p

import (
	"strconv"
	"strings"
)

// Normalize rewrites text the way kokoro-js 1.2.1 does before phonemising
// (its normalize_text): curly quotes and CJK punctuation become ASCII,
// brackets become «», whitespace is tidied, titles are spelled out
// (Dr. → Doctor, Mr. → Mister), and years, times, money, decimals, digit
// ranges and some capitals are rewritten into words espeak-ng reads the
// way Kokoro was trained to hear them.
//
// The rules are JavaScript regular expressions in kokoro-js; they are
// reproduced here as scanners with the same matches, including its quirks
// (only the first run of double spaces is collapsed; "etc." stays before
// a word). JavaScript's \b, \d and [A-Z] are ASCII-only, so the scanners
// work on bytes wherever the rule only looks at ASCII.
func Normalize(text string) string {
	s := mapChars(text)
	s = collapseFirstSpaceRun(s)
	s = dropSpacesBetweenNewlines(s)
	s = replaceTitles(s)
	s = replaceEtc(s)
	s = replaceYeah(s)
	s = replaceNumbers(s)
	s = dropThousandsCommas(s)
	s = replaceMoney(s)
	s = replaceDecimals(s)
	s = replaceDigitRanges(s)
	s = replacePluralCaps(s)
	s = replaceAcronymDots(s)
	return jsTrim(s)
}

// mapChars applies kokoro-js's one-character rules in one pass: ‘’ → ',
// «»“” → ", ( → «, ) → », CJK punctuation → ASCII punctuation and a space,
// and every whitespace character other than space and newline → space.
func mapChars(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch r {
		case '‘', '’':
			b.WriteByte('\'')
		case '«', '»', '“', '”':
			b.WriteByte('"')
		case '(':
			b.WriteString("«")
		case ')':
			b.WriteString("»")
		case '、', '，':
			b.WriteString(", ")
		case '。':
			b.WriteString(". ")
		case '！':
			b.WriteString("! ")
		case '：':
			b.WriteString(": ")
		case '；':
			b.WriteString("; ")
		case '？':
			b.WriteString("? ")
		case ' ', '\n':
			b.WriteRune(r)
		default:
			if jsSpace(r) {
				b.WriteByte(' ')
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// collapseFirstSpaceRun replaces the first run of two or more spaces with
// one space. kokoro-js's / {2,}/ has no g flag, so later runs stay.
func collapseFirstSpaceRun(s string) string {
	i := strings.Index(s, "  ")
	if i < 0 {
		return s
	}
	j := i + 2
	for j < len(s) && s[j] == ' ' {
		j++
	}
	return s[:i+1] + s[j:]
}

// dropSpacesBetweenNewlines deletes runs of spaces that sit between two
// newlines: /(?<=\n) +(?=\n)/g.
func dropSpacesBetweenNewlines(s string) string {
	if !strings.Contains(s, "\n ") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == ' ' && i > 0 && s[i-1] == '\n' {
			j := i
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j < len(s) && s[j] == '\n' {
				i = j
				continue
			}
			b.WriteString(s[i:j])
			i = j
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// replaceTitles spells out Dr., Mr., Ms. and Mrs. with kokoro-js's four
// rules, each over the previous one's output:
//
//	/\bD[Rr]\.(?= [A-Z])/g → Doctor
//	/\b(?:Mr\.|MR\.(?= [A-Z]))/g → Mister
//	/\b(?:Ms\.|MS\.(?= [A-Z]))/g → Miss
//	/\b(?:Mrs\.|MRS\.(?= [A-Z]))/g → Mrs
func replaceTitles(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	for _, t := range titles {
		if !t.mentioned(s) {
			continue
		}
		s = scanReplace(s, func(s string, i int) (int, string) {
			if i > 0 && isWordByte(s[i-1]) {
				return 0, ""
			}
			rest := s[i:]
			if t.always != "" && strings.HasPrefix(rest, t.always) {
				return len(t.always), t.repl
			}
			for _, b := range t.beforeName {
				if b != "" && strings.HasPrefix(rest, b) {
					end := i + len(b)
					if end+1 < len(s) && s[end] == ' ' && isUpper(s[end+1]) {
						return len(b), t.repl
					}
				}
			}
			return 0, ""
		})
	}
	return s
}

// title is one title rule.
type title struct {
	always     string
	beforeName [2]string
	repl       string
}

// titles lists the title rules in kokoro-js's order: always is replaced
// wherever it starts a word, beforeName only before " [A-Z]".
var titles = [...]title{
	{"", [2]string{"Dr.", "DR."}, "Doctor"},
	{"Mr.", [2]string{"MR."}, "Mister"},
	{"Ms.", [2]string{"MS."}, "Miss"},
	{"Mrs.", [2]string{"MRS."}, "Mrs"},
}

// mentioned reports whether s contains any of the title's abbreviations.
func (t title) mentioned(s string) bool {
	for _, a := range [...]string{t.always, t.beforeName[0], t.beforeName[1]} {
		if a != "" && strings.Contains(s, a) {
			return true
		}
	}
	return false
}

// scanReplace runs a global JavaScript-style replace: match is tried at
// each byte offset of s, left to right; a match of n > 0 bytes is replaced
// and scanning resumes after it. Matches are found in s itself, never in
// the replacements.
func scanReplace(s string, match func(s string, i int) (n int, repl string)) string {
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(s); {
		if n, repl := match(s, i); n > 0 {
			b.WriteString(s[last:i])
			b.WriteString(repl)
			i += n
			last = i
			continue
		}
		i++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// replaceEtc drops the period of "etc." unless a word follows:
// /\betc\.(?! [A-Z])/gi → "etc" (lower case whatever the input's case).
// With the i flag, [A-Z] matches any ASCII letter.
func replaceEtc(s string) string {
	if !containsFold(s, "etc.") {
		return s
	}
	return scanReplace(s, func(s string, i int) (int, string) {
		if i+4 > len(s) || !asciiEqualFold(s[i:i+4], "etc.") || (i > 0 && isWordByte(s[i-1])) {
			return 0, ""
		}
		if i+5 < len(s) && s[i+4] == ' ' && isLetter(s[i+5]) {
			return 0, ""
		}
		return 4, "etc"
	})
}

// replaceYeah respells "yeah" and "yea" as whole words, any case:
// /\b(y)eah?\b/gi → "$1e'a".
func replaceYeah(s string) string {
	if !containsFold(s, "yea") {
		return s
	}
	return scanReplace(s, func(s string, i int) (int, string) {
		if (s[i] != 'y' && s[i] != 'Y') || (i > 0 && isWordByte(s[i-1])) ||
			i+3 > len(s) || !asciiEqualFold(s[i+1:i+3], "ea") {
			return 0, ""
		}
		end := i + 3
		if end < len(s) && (s[end] == 'h' || s[end] == 'H') {
			end++ // "yeah" must end there: without the h, h follows "yea"
		}
		if end < len(s) && isWordByte(s[end]) {
			return 0, ""
		}
		return end - i, s[i:i+1] + "e'a"
	})
}

// replaceNumbers is kokoro-js's
//
//	/\d*\.\d+|\b\d{4}s?\b|(?<!:)\b(?:[1-9]|1[0-2]):[0-5]\d\b(?!:)/g
//
// with each match passed to splitNum. The first alternative only shields
// decimals from the other two (splitNum returns them unchanged).
func replaceNumbers(s string) string {
	if !containsDigit(s) {
		return s
	}
	return scanReplace(s, func(s string, i int) (int, string) {
		n := matchDecimal(s, i)
		if n == 0 {
			n = matchYear(s, i)
		}
		if n == 0 {
			n = matchTime(s, i)
		}
		if n == 0 {
			return 0, ""
		}
		return n, splitNum(s[i : i+n])
	})
}

// matchDecimal matches /\d*\.\d+/ at s[i:] and returns its length or 0.
func matchDecimal(s string, i int) int {
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j >= len(s) || s[j] != '.' {
		return 0
	}
	k := j + 1
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k == j+1 {
		return 0
	}
	return k - i
}

// matchYear matches /\b\d{4}s?\b/ at s[i:] and returns its length or 0.
func matchYear(s string, i int) int {
	if i+4 > len(s) || (i > 0 && isWordByte(s[i-1])) {
		return 0
	}
	for k := i; k < i+4; k++ {
		if !isDigit(s[k]) {
			return 0
		}
	}
	end := i + 4
	if end < len(s) && s[end] == 's' && (end+1 == len(s) || !isWordByte(s[end+1])) {
		return 5
	}
	if end == len(s) || !isWordByte(s[end]) {
		return 4
	}
	return 0
}

// matchTime matches /(?<!:)\b(?:[1-9]|1[0-2]):[0-5]\d\b(?!:)/ at s[i:]
// and returns its length or 0.
func matchTime(s string, i int) int {
	if i > 0 && (s[i-1] == ':' || isWordByte(s[i-1])) {
		return 0
	}
	tail := func(j int) int { // :[0-5]\d\b(?!:) at s[j:]
		if j+3 > len(s) || s[j] != ':' || s[j+1] < '0' || s[j+1] > '5' || !isDigit(s[j+2]) {
			return 0
		}
		end := j + 3
		if end < len(s) && (isWordByte(s[end]) || s[end] == ':') {
			return 0
		}
		return end - i
	}
	if i < len(s) && s[i] >= '1' && s[i] <= '9' {
		if n := tail(i + 1); n > 0 {
			return n
		}
	}
	if i+1 < len(s) && s[i] == '1' && s[i+1] >= '0' && s[i+1] <= '2' {
		return tail(i + 2)
	}
	return 0
}

// splitNum is kokoro-js's split_num: times become "H o'clock", "H oh M"
// or "H M"; years become two pairs of digits ("19 99", "19 oh 5",
// "19 hundred"), keeping a plural s. Decimals and other numbers pass
// through.
func splitNum(m string) string {
	if strings.Contains(m, ".") {
		return m
	}
	if h, mm, ok := strings.Cut(m, ":"); ok {
		hv, _ := strconv.Atoi(h)
		mv, _ := strconv.Atoi(mm)
		switch {
		case mv == 0:
			return strconv.Itoa(hv) + " o'clock"
		case mv < 10:
			return strconv.Itoa(hv) + " oh " + strconv.Itoa(mv)
		default:
			return strconv.Itoa(hv) + " " + strconv.Itoa(mv)
		}
	}
	year, _ := strconv.Atoi(m[:4])
	if year < 1100 || year%1000 < 10 {
		return m
	}
	left := m[:2]
	right, _ := strconv.Atoi(m[2:4])
	plural := ""
	if strings.HasSuffix(m, "s") {
		plural = "s"
	}
	if rem := year % 1000; rem >= 100 && rem <= 999 {
		if right == 0 {
			return left + " hundred" + plural
		}
		if right < 10 {
			return left + " oh " + strconv.Itoa(right) + plural
		}
	}
	return left + " " + strconv.Itoa(right) + plural
}

// dropThousandsCommas deletes commas between digits: /(?<=\d),(?=\d)/g.
func dropThousandsCommas(s string) string {
	if !strings.Contains(s, ",") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]) {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// replaceMoney is kokoro-js's
//
//	/[$£]\d+(?:\.\d+)?(?: hundred| thousand| (?:[bm]|tr)illion)*\b|[$£]\d+\.\d\d?\b/gi
//
// with each match passed to flipMoney. The second alternative can never
// match where the first fails (after [$£]\d+ the first always succeeds
// unless a word character follows the digits, and then the second fails
// too), so only the first is scanned for.
func replaceMoney(s string) string {
	if !strings.ContainsAny(s, "$£") {
		return s
	}
	return scanReplace(s, func(s string, i int) (int, string) {
		n := matchMoney(s, i)
		if n == 0 {
			return 0, ""
		}
		return n, flipMoney(s[i : i+n])
	})
}

// moneyScales are the multiplier words the money rule accepts after an
// amount, each with its leading space.
var moneyScales = [...]string{" hundred", " thousand", " billion", " million", " trillion"}

// matchMoney matches the money rule at s[i:] and returns its length or 0.
// It tries the candidate ends in the regular expression's backtracking
// order and keeps the first one followed by a word boundary.
func matchMoney(s string, i int) int {
	var j int
	switch {
	case s[i] == '$':
		j = i + 1
	case strings.HasPrefix(s[i:], "£"):
		j = i + len("£")
	default:
		return 0
	}
	d := j
	for d < len(s) && isDigit(s[d]) {
		d++
	}
	if d == j {
		return 0
	}
	// Candidate ends: with the decimals (if any) and 0…k scale words, the
	// most first, then without the decimals (no scale word can follow a
	// '.').
	var ends []int
	if n := matchDecimal(s, d); n > 0 && s[d] == '.' {
		e := d + n
		cands := []int{e}
		for {
			k := scaleAt(s, e)
			if k == 0 {
				break
			}
			e += k
			cands = append(cands, e)
		}
		for c := len(cands) - 1; c >= 0; c-- {
			ends = append(ends, cands[c])
		}
	}
	e := d
	cands := []int{e}
	for {
		k := scaleAt(s, e)
		if k == 0 {
			break
		}
		e += k
		cands = append(cands, e)
	}
	for c := len(cands) - 1; c >= 0; c-- {
		ends = append(ends, cands[c])
	}
	for _, end := range ends {
		if end == len(s) || !isWordByte(s[end]) {
			return end - i
		}
	}
	return 0
}

// scaleAt returns the length of a case-insensitive scale word (with its
// space) at s[i:], or 0.
func scaleAt(s string, i int) int {
	for _, w := range moneyScales {
		if i+len(w) <= len(s) && asciiEqualFold(s[i:i+len(w)], w) {
			return len(w)
		}
	}
	return 0
}

// flipMoney is kokoro-js's flip_money: "$5" → "5 dollars", "£1" →
// "1 pound", "$5.5" → "5 dollars and 50 cents", "$2 million" →
// "2 million dollars".
func flipMoney(m string) string {
	cur, rest := "pound", m[len("£"):]
	dollar := m[0] == '$'
	if dollar {
		cur, rest = "dollar", m[1:]
	}
	if strings.Contains(rest, " ") { // a scale word: Number() gives NaN
		return rest + " " + cur + "s"
	}
	whole, frac, ok := strings.Cut(rest, ".")
	if !ok {
		if rest == "1" {
			return rest + " " + cur
		}
		return rest + " " + cur + "s"
	}
	if len(frac) < 2 {
		frac += strings.Repeat("0", 2-len(frac))
	}
	cents := jsParseIntString(frac)
	var unit string
	switch {
	case dollar && cents == "1":
		unit = "cent"
	case dollar:
		unit = "cents"
	case cents == "1":
		unit = "penny"
	default:
		unit = "pence"
	}
	plural := "s"
	if whole == "1" {
		plural = ""
	}
	return whole + " " + cur + plural + " and " + cents + " " + unit
}

// replaceDecimals reads decimals digit by digit: /\d*\.\d+/g → "3 point
// 1 4".
func replaceDecimals(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return scanReplace(s, func(s string, i int) (int, string) {
		n := matchDecimal(s, i)
		if n == 0 {
			return 0, ""
		}
		whole, frac, _ := strings.Cut(s[i:i+n], ".")
		return n, whole + " point " + strings.Join(strings.Split(frac, ""), " ")
	})
}

// replaceDigitRanges reads a hyphen between digits as "to":
// /(?<=\d)-(?=\d)/g.
func replaceDigitRanges(s string) string {
	if !strings.Contains(s, "-") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '-' && i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]) {
			b.WriteString(" to ")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// replacePluralCaps applies three rules about a capital S:
//
//	/(?<=\d)S/g → " S"
//	/(?<=[BCDFGHJ-NP-TV-Z])'?s\b/g → "'S"  (CDs → CD'S)
//	/(?<=X')S\b/g → "s"
//
// each over the previous one's output.
func replacePluralCaps(s string) string {
	if strings.IndexByte(s, 'S') >= 0 {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == 'S' && i > 0 && isDigit(s[i-1]) {
				b.WriteString(" S")
				continue
			}
			b.WriteByte(s[i])
		}
		s = b.String()
	}
	if strings.IndexByte(s, 's') >= 0 {
		var b strings.Builder
		for i := 0; i < len(s); {
			if i > 0 && isUpperConsonant(s[i-1]) {
				j := i
				if s[j] == '\'' {
					j++
				}
				if j < len(s) && s[j] == 's' && (j+1 == len(s) || !isWordByte(s[j+1])) {
					b.WriteString("'S")
					i = j + 1
					continue
				}
			}
			b.WriteByte(s[i])
			i++
		}
		s = b.String()
	}
	if strings.Contains(s, "X'S") {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == 'S' && i >= 2 && s[i-2] == 'X' && s[i-1] == '\'' && (i+1 == len(s) || !isWordByte(s[i+1])) {
				b.WriteByte('s')
				continue
			}
			b.WriteByte(s[i])
		}
		s = b.String()
	}
	return s
}

// replaceAcronymDots turns the periods of dotted initials into hyphens so
// espeak-ng spells them rather than ending a sentence:
//
//	/(?:[A-Za-z]\.){2,} [a-z]/g → periods → "-"   ("e.g. x" → "e-g- x")
//	/(?<=[A-Z])\.(?=[A-Z])/gi → "-"               ("U.S" → "U-S")
func replaceAcronymDots(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && isLetter(s[j]) && s[j+1] == '.' {
			j += 2
		}
		if j-i >= 4 && j+1 < len(s) && s[j] == ' ' && s[j+1] >= 'a' && s[j+1] <= 'z' {
			b.WriteString(strings.ReplaceAll(s[i:j+2], ".", "-"))
			i = j + 2
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	s = b.String()
	if !strings.Contains(s, ".") {
		return s
	}
	out := []byte(s)
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '.' && isLetter(s[i-1]) && isLetter(s[i+1]) {
			out[i] = '-'
		}
	}
	return string(out)
}

// jsParseIntString renders parseInt(digits, 10) the way JavaScript prints
// the resulting number: exact below 2^53, rounded to a double beyond, and
// in exponent form from 1e21 on.
func jsParseIntString(digits string) string {
	if v, err := strconv.ParseInt(digits, 10, 64); err == nil && v < 1<<53 {
		return strconv.FormatInt(v, 10)
	}
	f, _ := strconv.ParseFloat(digits, 64)
	return jsNumberString(f)
}

// jsNumberString formats a non-negative finite float64 like JavaScript's
// Number.prototype.toString: the shortest round-tripping digits, written
// out in full below 1e21 and as d.ddde+N from there on.
func jsNumberString(f float64) string {
	if f < 1e21 {
		if f == float64(int64(f)) && f < 1<<53 {
			return strconv.FormatInt(int64(f), 10) // exact: every digit is significant
		}
		e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde+NN
		mant, exp, _ := strings.Cut(e, "e")
		n, _ := strconv.Atoi(exp)
		digits := strings.Replace(mant, ".", "", 1)
		if n+1 >= len(digits) {
			return digits + strings.Repeat("0", n+1-len(digits))
		}
		return digits[:n+1] + "." + digits[n+1:]
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	if exp[0] == '+' {
		exp = exp[1:]
	}
	exp = strings.TrimLeft(exp, "0")
	return mant + "e+" + exp
}

// jsSpace reports whether r is whitespace to JavaScript's \s and trim():
// the ECMAScript WhiteSpace and LineTerminator sets.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// jsTrim is JavaScript's String.prototype.trim.
func jsTrim(s string) string { return strings.TrimFunc(s, jsSpace) }

// isWordByte reports whether c is a JavaScript \w character.
func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || isLetter(c)
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isUpper(c byte) bool  { return c >= 'A' && c <= 'Z' }
func isLetter(c byte) bool { return isUpper(c) || (c >= 'a' && c <= 'z') }

// isUpperConsonant is [BCDFGHJ-NP-TV-Z].
func isUpperConsonant(c byte) bool {
	return isUpper(c) && c != 'A' && c != 'E' && c != 'I' && c != 'O' && c != 'U'
}

func containsDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// asciiEqualFold compares ASCII case-insensitively, as a JavaScript
// regular expression with the i flag (and without u) does for ASCII
// patterns: non-ASCII bytes must match exactly.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// containsFold reports whether s contains the ASCII string sub, ignoring
// ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if asciiEqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
