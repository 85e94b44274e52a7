package decode

import (
	"bytes"
	"compress/zlib"
)

// CompressionRatio is the length of text in UTF-8 bytes over the length of
// its zlib compression at level 6: repetitive text, a decoder stuck in a
// loop, compresses well and scores high. OpenAI computes it with CPython's
// zlib, which is the system's libz; so does this function where libz can be
// loaded (see libzCompressedLen), because Go's compress/zlib makes a
// different stream whose length moves ratios across the 2.4 threshold (4 of
// 300 sample texts). Without libz it falls back to compress/zlib.
func CompressionRatio(text string) float64 {
	if text == "" {
		return 0 // as CPython: 0 bytes over an 8-byte stream
	}
	n, ok := libzCompressedLen([]byte(text))
	if !ok {
		n = goCompressedLen([]byte(text))
	}
	return float64(len(text)) / float64(n)
}

func goCompressedLen(b []byte) int {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer cannot fail
	_ = w.Close()
	return buf.Len()
}
