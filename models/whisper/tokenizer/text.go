package tokenizer

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

func validUTF8(s string) bool { return utf8.ValidString(s) }

func invalidUTF8(s string) error {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Errorf("encode: %w (byte 0x%02x at offset %d)", ErrInvalidUTF8, s[i], i)
		}
		i += n
	}
	return fmt.Errorf("encode: %w", ErrInvalidUTF8)
}

// appendLossy writes b as text, replacing each maximal invalid subsequence
// with one U+FFFD, as Python's errors="replace", Rust's from_utf8_lossy and
// the WHATWG TextDecoder do (Go's strings.ToValidUTF8 would merge runs).
func appendLossy(out *strings.Builder, b []byte) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			out.Write(b[:n])
			b = b[n:]
			continue
		}
		out.WriteRune(utf8.RuneError)
		b = b[maximalSubpart(b):]
	}
}

// maximalSubpart returns the length of the longest prefix of b that starts
// a well-formed UTF-8 sequence, at least 1; b does not start with one.
func maximalSubpart(b []byte) int {
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch c := b[0]; {
	case 0xC2 <= c && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case 0xE1 <= c && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case 0xF1 <= c && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

// cleanUp is Hugging Face's clean_up_tokenization, in its order.
var cleanUpReplacer = []string{
	" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'",
	" n't", "n't", " 'm", "'m", " 's", "'s", " 've", "'ve", " 're", "'re",
}

func cleanUp(s string) string {
	// The replacements run one after another over the whole string, so
	// each is its own pass (a strings.Replacer would do them in one).
	for i := 0; i < len(cleanUpReplacer); i += 2 {
		s = strings.ReplaceAll(s, cleanUpReplacer[i], cleanUpReplacer[i+1])
	}
	return s
}

func roundHundredths(seconds float64) int64 { return int64(math.Round(seconds * 100)) }
