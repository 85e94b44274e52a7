package cuda

import (
	"bytes"
	"testing"
)

// TestCopyStaged: the split copy gives copy's result for sizes below, at
// and around the split, and for a destination shorter than the source.
func TestCopyStaged(t *testing.T) {
	for _, n := range []int{0, 1, stagedChunk - 1, 2 * stagedChunk, 2*stagedChunk + 7, 9*stagedChunk + 3} {
		src := make([]byte, n+5)
		for i := range src {
			src[i] = byte(i*7 + i>>9)
		}
		got, want := make([]byte, n), make([]byte, n)
		copyStaged(got, src)
		copy(want, src)
		if !bytes.Equal(got, want) {
			t.Errorf("%d bytes: copyStaged differs from copy", n)
		}
	}
}
