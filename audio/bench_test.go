package audio

import (
	"bytes"
	"os"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
)

// BenchmarkReadWAV16 decodes one minute of 16 kHz mono 16-bit WAV from
// memory.
func BenchmarkReadWAV16(b *testing.B) {
	x := make([]float32, 16000*60)
	for i := range x {
		x[i] = float32(i%200-100) / 128
	}
	var buf bytes.Buffer
	if err := WriteWAV(&buf, Clip{Samples: x, SampleRate: 16000}, Int16); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for range b.N {
		if _, err := ReadWAV(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteWAV16 encodes one minute of 16 kHz mono audio as 16-bit WAV.
func BenchmarkWriteWAV16(b *testing.B) {
	x := make([]float32, 16000*60)
	var buf bytes.Buffer
	b.SetBytes(int64(2 * len(x)))
	for range b.N {
		buf.Reset()
		if err := WriteWAV(&buf, Clip{Samples: x, SampleRate: 16000}, Int16); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeVorbis decodes all of jfk.wav as Ogg/Vorbis (11 s, 16 kHz
// mono, oggenc -q 4) from memory.
func BenchmarkDecodeVorbis(b *testing.B) {
	ogg, err := os.ReadFile(testenv.AudioFixture(b, "jfk-11s.ogg"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(ogg)))
	b.ReportAllocs()
	for range b.N {
		c, err := Decode(bytes.NewReader(ogg))
		if err != nil || len(c.Samples) != 176000 {
			b.Fatalf("%d samples, %v", len(c.Samples), err)
		}
	}
}
