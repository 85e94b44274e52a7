package decode

import (
	"bytes"
	"compress/zlib"
)

// CompressionRatio is the length of text in UTF-8 bytes over the length of
// its zlib compression: repetitive text, a decoder stuck in a loop,
// compresses well and scores high. OpenAI uses CPython's zlib at level 6;
// Go's compress/zlib at the same level makes a slightly different stream, so
// ratios near a threshold can fall on the other side of it.
func CompressionRatio(text string) float64 {
	if text == "" {
		return 0
	}
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write([]byte(text)) // writes to a bytes.Buffer cannot fail
	_ = w.Close()
	return float64(len(text)) / float64(buf.Len())
}
