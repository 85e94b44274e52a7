// Package wer measures word error rate: the word-level edit distance
// between a reference transcript and a hypothesis, after a normalization
// light enough to read (lower case, no punctuation, hyphens split, numbers
// 0–999 spelled out), so that "10 of clubs." and "ten of clubs" agree.
package wer

import (
	"strconv"
	"strings"
	"unicode"
)

// Result counts the edits that turn the reference into the hypothesis.
type Result struct {
	Words         int // reference words
	Sub, Del, Ins int
}

// Errors is the number of edits: substitutions, deletions and insertions.
func (r Result) Errors() int { return r.Sub + r.Del + r.Ins }

// Rate is Errors over the reference's words; an empty reference counts as
// one word, so the rate stays finite.
func (r Result) Rate() float64 {
	return float64(r.Errors()) / float64(max(r.Words, 1))
}

// Add sums two results, for the WER of a set of utterances.
func (r Result) Add(o Result) Result {
	return Result{Words: r.Words + o.Words, Sub: r.Sub + o.Sub, Del: r.Del + o.Del, Ins: r.Ins + o.Ins}
}

// Compare normalizes both texts and aligns their words with the minimum
// number of edits (Levenshtein; ties prefer substitutions).
func Compare(reference, hypothesis string) Result {
	ref, hyp := Normalize(reference), Normalize(hypothesis)
	// d[i][j]: edits between ref[:i] and hyp[:j], with the counts behind it.
	type cell struct{ cost, sub, del, ins int }
	prev := make([]cell, len(hyp)+1)
	cur := make([]cell, len(hyp)+1)
	for j := range prev {
		prev[j] = cell{cost: j, ins: j}
	}
	for i := 1; i <= len(ref); i++ {
		cur[0] = cell{cost: i, del: i}
		for j := 1; j <= len(hyp); j++ {
			best := prev[j-1]
			if ref[i-1] != hyp[j-1] {
				best.cost++
				best.sub++
			}
			if d := prev[j]; d.cost+1 < best.cost {
				best = d
				best.cost++
				best.del++
			}
			if n := cur[j-1]; n.cost+1 < best.cost {
				best = n
				best.cost++
				best.ins++
			}
			cur[j] = best
		}
		prev, cur = cur, prev
	}
	last := prev[len(hyp)]
	return Result{Words: len(ref), Sub: last.sub, Del: last.del, Ins: last.ins}
}

// Normalize returns the words of s in lower case without punctuation
// (apostrophes inside words are kept, and combining marks: Devanagari's
// vowel signs and the like are part of the word), splitting at hyphens
// and spelling out whole numbers from 0 to 999.
func Normalize(s string) []string {
	s = strings.ToLower(s)
	var words []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '-' || r == '–' || r == '—' || r == '/'
	}) {
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) })
		w = strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '\'' {
				return r
			}
			return -1
		}, w)
		if w == "" {
			continue
		}
		if n, err := strconv.Atoi(w); err == nil && n >= 0 && n < 1000 {
			words = append(words, spell(n)...)
			continue
		}
		words = append(words, w)
	}
	return words
}

var (
	ones = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
		"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	tens = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
)

// spell writes 0 ≤ n < 1000 in words ("one hundred twenty three").
func spell(n int) []string {
	var w []string
	if n >= 100 {
		w = append(w, ones[n/100], "hundred")
		if n %= 100; n == 0 {
			return w
		}
	}
	switch {
	case n < 20:
		w = append(w, ones[n])
	case n%10 == 0:
		w = append(w, tens[n/10])
	default:
		w = append(w, tens[n/10], ones[n%10])
	}
	return w
}
