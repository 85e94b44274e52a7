package decode

import (
	"testing"
)

// TestCompressionRatio compares with CPython's len(zlib.compress(text)),
// which OpenAI's compression_ratio divides by (lengths taken with Python 3
// on this machine's zlib 1.2.13).
func TestCompressionRatio(t *testing.T) {
	if _, ok := libzCompressedLen([]byte("x")); !ok {
		t.Skip("SKIPPED: no system libz (zlib1g); the ratio falls back to Go's compress/zlib, whose lengths differ")
	}
	for _, c := range []struct {
		text string
		zlen int
	}{
		{"And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.", 79},
		{"w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1", 13},
		{"the quick brown fox the quick brown fox the quick brown fox", 31},
		{"Ça va? 日本語のテキスト 🙂", 48},
		{"a", 9},
		{"over lazy dog what country for dog can brown ask you your and quick and jumps fox over americans my the", 86},
	} {
		want := float64(len(c.text)) / float64(c.zlen)
		if got := CompressionRatio(c.text); got != want {
			t.Errorf("CompressionRatio(%q) = %v, want %v", c.text, got, want)
		}
	}
	if got := CompressionRatio(""); got != 0 {
		t.Errorf("empty text: %v", got)
	}
	// The fallback still ranks a loop far above plain text.
	if loop, plain := float64(36)/float64(goCompressedLen([]byte("w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1 w1"))), 1.0; loop < 2*plain {
		t.Errorf("Go zlib ratio of a loop: %v", loop)
	}
}
