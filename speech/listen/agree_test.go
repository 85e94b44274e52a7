package listen

import (
	"slices"
	"testing"
)

// TestAgreement: tokens ≥ 100 are word starts (" word"), 50–59
// punctuation (","), 60–69 punctuation that ends a sentence ("."), below
// are word pieces; 1000 on are timestamps; 200–299 are the words 100–199
// capitalised (" Word").
func TestAgreement(t *testing.T) {
	word := func(id int32) bool { return id >= 100 || id >= 50 && id < 70 }
	ends := func(id int32) bool { return id >= 60 && id < 70 }
	text := func(id int32) bool { return id < 1000 }
	fold := func(id int32) int32 {
		if id >= 200 && id < 300 {
			return id - 100
		}
		return id
	}
	for _, tc := range []struct {
		name  string
		hyps  [][]int32
		want  []int32 // committed after the last
		three bool    // LocalAgreement-3
	}{
		{"one reading commits nothing", [][]int32{{1000, 101, 102}}, nil, false},
		{"agreed words before a word start", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}}, []int32{1000, 101, 102}, false},
		{"a word still growing is kept back", [][]int32{{1000, 101, 5}, {1000, 101, 5, 6}}, []int32{1000}, false},
		{"the last word needs a token after it in both", [][]int32{{1000, 101, 102}, {1000, 101, 102, 103}}, []int32{1000, 101}, false},
		{"disagreement after the first timestamp", [][]int32{{1000, 101}, {1000, 102}}, []int32{1000}, false},
		{"commits only grow", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}, {1000, 101, 105}}, []int32{1000, 101, 102}, false},
		{"a reading that is not a continuation changes nothing", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}, {1000, 109, 102, 104}, {1000, 101, 102, 104, 106}}, []int32{1000, 101, 102}, false},
		{"punctuation in one reading ends the word", [][]int32{{1000, 101, 102, 50}, {1000, 101, 102, 103}}, []int32{1000, 101, 102}, false},
		{"a word piece in one reading keeps it back", [][]int32{{1000, 101, 102, 50}, {1000, 101, 102, 5}}, []int32{1000, 101}, false},
		{"more agreed later", [][]int32{{1000, 101, 102, 103}, {1000, 101, 102, 104}, {1000, 101, 102, 104, 105}, {1000, 101, 102, 104, 105, 106}}, []int32{1000, 101, 102, 104}, false},
		{"a sentence's end only before more text", [][]int32{{1000, 101, 102, 60, 1001}, {1000, 101, 102, 60, 1001, 1002}}, []int32{1000, 101, 102}, false},
		{"a sentence's end before text in both", [][]int32{{1000, 101, 60, 103}, {1000, 101, 60, 103, 104}}, []int32{1000, 101, 60}, false},
		{"a sentence's end before text in one", [][]int32{{1000, 101, 60, 1001}, {1000, 101, 60, 103}}, []int32{1000, 101}, false},
		// cards_005: "8 of", "8 of Spades", "Eight of Spades for...",
		// "Eight of spades, four of clubs."
		{"three: two readings agree, the third not", [][]int32{{1000, 108, 102}, {1000, 108, 102, 103}, {1000, 118, 102, 103}}, []int32{1000}, true},
		{"three: the last three agree", [][]int32{{1000, 108, 102}, {1000, 108, 102, 103}, {1000, 118, 102, 103}, {1000, 118, 102, 104}, {1000, 118, 102, 105}}, []int32{1000, 118, 102}, true},
		{"three: the older reading's boundary counts", [][]int32{{1000, 101, 5}, {1000, 101, 102}, {1000, 101, 102, 103}}, []int32{1000}, true},
		{"three: punctuation and a timestamp end the word", [][]int32{{1000, 101, 1010}, {1000, 101, 50}, {1000, 101, 102, 103}}, []int32{1000, 101}, true},
		// jfk's last sentence (tiny): each reading began it at another
		// timestamp.
		{"timestamps agree whatever their steps", [][]int32{{1000, 101, 102, 103}, {1025, 101, 102, 104}}, []int32{1025, 101, 102}, false},
		{"three: timestamps agree whatever their steps", [][]int32{{1025, 101, 102, 60}, {1015, 101, 102, 103, 60}, {1015, 101, 102, 103, 104}}, []int32{1015, 101, 102}, true},
		{"a timestamp and text disagree", [][]int32{{1000, 101, 1010, 1010, 102}, {1000, 101, 103, 102}}, []int32{1000, 101}, false},
		// cards_005 (tiny): "Eight of Spades for...", "Eight of spades,
		// four of clubs.", "Spades, Four of Clothes": case alone had kept
		// "spades" and "four" for the Final.
		{"a word in another case agrees, lower-case within a sentence", [][]int32{{1000, 118, 102, 103, 110}, {1000, 118, 102, 203, 50, 104}}, []int32{1000, 118, 102, 103}, false},
		{"three: case folds in every reading", [][]int32{{1000, 118, 102, 203, 110}, {1000, 118, 102, 103, 50, 104}, {1000, 118, 102, 203, 50, 204, 102, 105}}, []int32{1000, 118, 102, 103}, true},
		{"a word in another case agrees, capitalised after a sentence's end", [][]int32{{1000, 101, 60, 203, 110}, {1000, 101, 60, 103, 50, 104}}, []int32{1000, 101, 60, 203}, false},
		{"the group's first word keeps the latest reading's case", [][]int32{{1000, 103, 110}, {1000, 203, 50, 104}}, []int32{1000, 203}, false},
		{"another word is not another case", [][]int32{{1000, 118, 102, 203}, {1000, 118, 102, 104, 105}}, []int32{1000, 118, 102}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := agreement{boundary: word, ends: ends, text: text, fold: fold, three: tc.three}
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
