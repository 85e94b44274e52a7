package listen

import (
	"slices"
	"testing"
)

// TestAgreement: tokens ≥ 100 are word starts (" word"), 50–59
// punctuation (","), below are word pieces; 1000 is a timestamp.
func TestAgreement(t *testing.T) {
	word := func(id int32) bool { return id >= 100 || id >= 50 && id < 60 }
	for _, tc := range []struct {
		name string
		hyps [][]int32
		want []int32 // committed after the last
	}{
		{"one reading commits nothing", [][]int32{{1000, 101, 102}}, nil},
		{"agreed words before a word start", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}}, []int32{1000, 101, 102}},
		{"a word still growing is kept back", [][]int32{{1000, 101, 5}, {1000, 101, 5, 6}}, []int32{1000}},
		{"the last word needs a token after it in both", [][]int32{{1000, 101, 102}, {1000, 101, 102, 103}}, []int32{1000, 101}},
		{"disagreement after the first timestamp", [][]int32{{1000, 101}, {1000, 102}}, []int32{1000}},
		{"commits only grow", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}, {1000, 101, 105}}, []int32{1000, 101, 102}},
		{"a reading that is not a continuation changes nothing", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}, {1000, 109, 102, 104}, {1000, 101, 102, 104, 106}}, []int32{1000, 101, 102}},
		{"punctuation in one reading ends the word", [][]int32{{1000, 101, 102, 50}, {1000, 101, 102, 103}}, []int32{1000, 101, 102}},
		{"a word piece in one reading keeps it back", [][]int32{{1000, 101, 102, 50}, {1000, 101, 102, 5}}, []int32{1000, 101}},
		{"more agreed later", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}, {1000, 101, 102, 104, 105}, {1000, 101, 102, 104, 105, 106}}, []int32{1000, 101, 102, 104}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := agreement{boundary: word}
			for _, h := range tc.hyps {
				before := slices.Clone(a.committed)
				n := a.update(h)
				if n != len(a.committed) || !equalPrefix(a.committed, before) {
					t.Fatalf("after %v: committed %v (%d), before %v", h, a.committed, n, before)
				}
			}
			if !slices.Equal(a.committed, tc.want) {
				t.Errorf("committed %v, want %v", a.committed, tc.want)
			}
		})
	}
}
