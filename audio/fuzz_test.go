package audio

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

// namedErrors are the errors a parser failure must wrap.
var namedErrors = []error{ErrNotWAV, ErrTruncated, ErrUnsupportedCodec, ErrNoChannels, ErrTooLarge, ErrSampleRate, ErrBadHeader}

func isNamed(err error) bool {
	for _, e := range namedErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzReadWAV feeds arbitrary bytes to the WAV reader. Corpus seeds live in
// testdata/fuzz/FuzzReadWAV; more come from f.Add below. Properties: no
// panic; every failure names its cause; frame-by-frame streaming agrees
// with the whole-file read; whatever decodes re-encodes as float32 WAV
// bit-exactly.
func FuzzReadWAV(f *testing.F) {
	f.Add(riffFile(chunk("fmt ", pcmFmt(1, 1, 16000, 2, 16)), chunk("data", []byte{1, 2, 3, 4, 5, 6})))
	f.Add(riffFile(chunk("fmt ", pcmFmt(1, 2, 8000, 2, 8)), chunk("LIST", []byte("INFOISFT\x05\x00\x00\x00abcd\x00")), chunk("data", []byte{1, 2, 3})))
	f.Add(floatWAV(24000, 2, []float32{0.5, -0.5, 1, float32(math.NaN())}, true))
	f.Add(riffFile(chunk("fmt ", pcmFmt(1, 3, 44100, 9, 24)), append([]byte("data\xff\xff\xff\xff"), make([]byte, 20)...)))
	f.Add(riffFile(chunk("fmt ", pcmFmt(0x11, 1, 8000, 256, 4)), chunk("data", nil)))
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err := ReadWAV(bytes.NewReader(in))
		if err != nil && !isNamed(err) {
			t.Fatalf("error names no cause: %v", err)
		}
		if err != nil && !errors.Is(err, ErrTruncated) {
			return
		}
		wholeErr := err

		rd, err := NewWAVReader(bytes.NewReader(in))
		if err != nil {
			if wholeErr == nil || err.Error() != wholeErr.Error() {
				t.Fatalf("streaming header: %v; whole-file: %v", err, wholeErr)
			}
			return // truncated inside the header
		}
		var streamed []float32
		frame := make([]float32, 7)
		for {
			n, err := rd.Read(frame)
			streamed = append(streamed, frame[:n]...)
			if err == io.EOF {
				if wholeErr != nil {
					t.Fatalf("streaming ended cleanly, whole-file read failed: %v", wholeErr)
				}
				break
			}
			if err != nil {
				if !errors.Is(err, ErrTruncated) || wholeErr == nil {
					t.Fatalf("streaming: %v; whole-file: %v", err, wholeErr)
				}
				break
			}
		}
		if len(streamed) != len(whole.Samples) {
			t.Fatalf("streaming gave %d samples, whole-file %d", len(streamed), len(whole.Samples))
		}
		for i := range streamed {
			if math.Float32bits(streamed[i]) != math.Float32bits(whole.Samples[i]) {
				t.Fatalf("sample %d: streaming %v, whole-file %v", i, streamed[i], whole.Samples[i])
			}
		}

		var b bytes.Buffer
		w, err := NewWAVWriter(&b, Format{SampleRate: whole.SampleRate, Channels: 1, Encoding: Float32})
		if err != nil {
			t.Fatalf("cannot write back a clip at %d Hz: %v", whole.SampleRate, err)
		}
		// The writer refuses non-finite samples; float WAVs may hold them.
		finite := true
		for _, s := range whole.Samples {
			if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
				finite = false
			}
		}
		if !finite {
			return
		}
		if err := w.Write(whole.Samples); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		back, err := ReadWAV(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if back.SampleRate != whole.SampleRate || len(back.Samples) != len(whole.Samples) {
			t.Fatalf("re-encoded: %d Hz × %d, want %d Hz × %d", back.SampleRate, len(back.Samples), whole.SampleRate, len(whole.Samples))
		}
		for i := range back.Samples {
			if math.Float32bits(back.Samples[i]) != math.Float32bits(whole.Samples[i]) {
				t.Fatalf("re-encoded sample %d differs", i)
			}
		}
	})
}
