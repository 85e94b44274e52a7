package wer

import (
	"slices"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{" And so, my fellow Americans.", []string{"and", "so", "my", "fellow", "americans"}},
		{"10 of clubs.", []string{"ten", "of", "clubs"}},
		{" 5-5", []string{"five", "five"}},
		{"Go forward 10 meters.", []string{"go", "forward", "ten", "meters"}},
		{"It's 125 o'clock!", []string{"it's", "one", "hundred", "twenty", "five", "o'clock"}},
		{"2024 x 40", []string{"2024", "x", "forty"}},
		{"", nil},
		{" ... ", nil},
		{"आज मौसम अच्छा है।", []string{"आज", "मौसम", "अच्छा", "है"}}, // vowel signs kept
		{"हैं है", []string{"हैं", "है"}},                            // and so told apart
		{"cafe\u0301!", []string{"cafe\u0301"}},
	} {
		if got := Normalize(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		ref, hyp string
		want     Result
	}{
		{"ten of clubs", " 10 of clubs.", Result{Words: 3}},
		{"four queen of clubs", " for Queen of Clubs.", Result{Words: 4, Sub: 1}},
		{"five five", "Five.", Result{Words: 2, Del: 1}},
		{"seven of clubs", "seven of the clubs", Result{Words: 3, Ins: 1}},
		{"eight of spades four of clubs seven of hearts", "8 of spades, 4 of close, 7 of hearts.", Result{Words: 9, Sub: 1}},
		{"", "hello", Result{Ins: 1}},
		{"a b c", "", Result{Words: 3, Del: 3}},
		{"a b c d", "x a c d y", Result{Words: 4, Sub: 2, Ins: 1}}, // three edits either way; ties prefer substitutions
	} {
		got := Compare(c.ref, c.hyp)
		if got != c.want {
			t.Errorf("Compare(%q, %q) = %+v, want %+v", c.ref, c.hyp, got, c.want)
		}
	}
	r := Compare("a b", "a c").Add(Compare("c d e", "c d e"))
	if r.Words != 5 || r.Errors() != 1 || r.Rate() != 0.2 {
		t.Errorf("sum %+v rate %v", r, r.Rate())
	}
}

// TestCompareIsMinimal checks the alignment against brute force on small
// word sets: the edit count equals the Levenshtein distance.
func TestCompareIsMinimal(t *testing.T) {
	words := []string{"a", "b", "c"}
	var texts []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		texts = append(texts, prefix)
		if n == 0 {
			return
		}
		for _, w := range words {
			gen(prefix+" "+w, n-1)
		}
	}
	gen("", 3)
	for _, a := range texts {
		for _, b := range texts {
			ra, rb := Normalize(a), Normalize(b)
			if got, want := Compare(a, b).Errors(), lev(ra, rb); got != want {
				t.Fatalf("Compare(%q, %q) = %d edits, Levenshtein %d", a, b, got, want)
			}
		}
	}
}

func lev(a, b []string) int {
	if len(a) == 0 {
		return len(b)
	}
	if len(b) == 0 {
		return len(a)
	}
	c := 1
	if a[0] == b[0] {
		c = 0
	}
	return min(lev(a[1:], b[1:])+c, lev(a[1:], b)+1, lev(a, b[1:])+1)
}

func FuzzCompare(f *testing.F) {
	f.Add("ten of clubs", "10 of clubs.")
	f.Add("", "x")
	f.Add("a-b c", "ä ö 99")
	f.Fuzz(func(t *testing.T, ref, hyp string) {
		r := Compare(ref, hyp)
		nr, nh := len(Normalize(ref)), len(Normalize(hyp))
		if r.Words != nr || r.Errors() < abs(nr-nh) || r.Errors() > max(nr, nh) || r.Sub < 0 || r.Del < 0 || r.Ins < 0 {
			t.Fatalf("Compare(%q, %q) = %+v (words %d/%d)", ref, hyp, r, nr, nh)
		}
		if r.Words-r.Del-r.Sub+r.Sub+r.Ins != nh {
			t.Fatalf("counts %+v do not add up to %d hypothesis words", r, nh)
		}
	})
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
