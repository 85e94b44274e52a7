package cuda

import (
	"bytes"
	"testing"
)

// TestCopyStaged: the split copy gives copy's result for sizes below, at
// and around the split, for a destination shorter than the source, and for
// several copies at once, whose goroutines' runs cut across them.
func TestCopyStaged(t *testing.T) {
	for _, sizes := range [][]int{
		{0}, {1}, {stagedChunk - 1}, {2 * stagedChunk}, {2*stagedChunk + 7}, {9*stagedChunk + 3},
		{stagedChunk / 3, 0, 5*stagedChunk + 1, stagedChunk, 17},
		{3*stagedChunk + 5, 3*stagedChunk + 5, 3*stagedChunk + 5},
	} {
		var pairs []copyPair
		var wants [][]byte
		for k, n := range sizes {
			src := make([]byte, n+5)
			for i := range src {
				src[i] = byte(i*7 + i>>9 + k)
			}
			want := make([]byte, n)
			copy(want, src)
			pairs = append(pairs, copyPair{make([]byte, n), src})
			wants = append(wants, want)
		}
		copyStaged(pairs...)
		for k := range sizes {
			if !bytes.Equal(pairs[k].dst, wants[k]) {
				t.Errorf("sizes %v: copy %d differs from copy's", sizes, k)
			}
		}
	}
}
