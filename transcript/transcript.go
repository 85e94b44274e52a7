// Package transcript writes speech-recognition results in the formats
// people use them in: plain text, listen's JSON lines, SubRip (SRT),
// WebVTT, whisper-cli's TSV and console lines, and OpenAI's json and
// verbose_json responses. A Writer takes segments as they become final,
// so that listen can print while it transcribes; the formats that need
// the whole transcript (OpenAI's) write on Close.
//
// Whatever the format, segment and word text is trimmed (Whisper's tokens
// carry a leading space), invalid UTF-8 is replaced by U+FFFD, and line
// breaks inside a text become spaces, so that no text can end a cue or
// forge a record. Times are written in whole milliseconds, rounded to
// nearest; a negative or non-finite time is written as 0, and a cue
// never ends before it starts.
package transcript

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Word is one word's timing within a segment.
type Word struct {
	// Text is the word as written, without surrounding space.
	Text string
	// Start and End are seconds from the start of the input.
	Start, End float64
	// Probability is the model's probability of the word's tokens.
	Probability float64
}

// Segment is a stretch of the transcript between two timestamps.
type Segment struct {
	// ID numbers the segments of a run from 0.
	ID int
	// Seek is the 10-ms mel frame where the segment's 30-s window starts.
	Seek int
	// Start and End are seconds from the start of the input.
	Start, End float64
	// Text is the segment's text; a leading space is dropped on output.
	Text string
	// Tokens are the token ids decoded, timestamps included.
	Tokens []int32
	// Language is the language code the segment was decoded in ("en").
	Language string
	// Temperature, AvgLogProb, CompressionRatio and NoSpeechProb describe
	// the segment's decoding, as in OpenAI's verbose_json.
	Temperature      float64
	AvgLogProb       float64
	CompressionRatio float64
	NoSpeechProb     float64
	// Words are the word timings, nil when not asked for or not known.
	Words []Word
	// EndsUtterance marks the last segment of an utterance: the Text
	// format ends its line there (and at Close).
	EndsUtterance bool
}

// Info describes the whole transcript, for the formats that report it
// (verbose_json).
type Info struct {
	// Task is "transcribe" (the default when empty) or "translate".
	Task string
	// Language is reported as given; OpenAI reports the language's
	// English name ("english"). When empty, the first segment's code is
	// used.
	Language string
	// Duration is the seconds of input audio; when 0, the end of the
	// last segment.
	Duration float64
}

// cleanText trims s, replaces invalid UTF-8 by U+FFFD and every line break
// (and other control character) by a space.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, s)
	}
	return strings.TrimSpace(s)
}

// Join returns the text of segs as one string: each segment's text
// cleaned, separated by a space except between two characters of a
// script written without spaces (Han, Hiragana, Katakana, CJK
// punctuation), where Whisper puts none.
func Join(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		appendText(&b, cleanText(s.Text))
	}
	return b.String()
}

// appendText adds t to b with the separator Join uses.
func appendText(b *strings.Builder, t string) {
	if t == "" {
		return
	}
	if b.Len() > 0 {
		last, _ := utf8.DecodeLastRuneInString(b.String())
		first, _ := utf8.DecodeRuneInString(t)
		if !unspaced(last) || !unspaced(first) {
			b.WriteByte(' ')
		}
	}
	b.WriteString(t)
}

// unspaced reports whether r belongs to a script written without spaces
// between words.
func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

// millis turns seconds into whole milliseconds, rounded to nearest, with
// negative and non-finite times as 0.
func millis(sec float64) int64 {
	if math.IsNaN(sec) || sec <= 0 {
		return 0
	}
	if sec > 1e12 || math.IsInf(sec, 1) {
		sec = 1e12 // about 31,700 years: beyond any recording, still exact
	}
	return int64(math.Round(sec * 1000))
}

// seconds3 is sec rounded to milliseconds, for JSON.
func seconds3(sec float64) float64 { return float64(millis(sec)) / 1000 }

// finite replaces NaN and infinities (which JSON cannot carry) by 0.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
