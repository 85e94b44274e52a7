package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-audio/wav"
)

func TestWAV16RoundTripBitExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ints := make([]int16, 4097)
	for i := range ints {
		ints[i] = int16(rng.Uint32())
	}
	ints[0], ints[1], ints[2] = math.MinInt16, math.MaxInt16, 0
	clip := Clip{SampleRate: 16000, Samples: make([]float32, len(ints))}
	for i, v := range ints {
		clip.Samples[i] = float32(v) / 32768
	}
	var first bytes.Buffer
	if err := WriteWAV(&first, clip, Int16); err != nil {
		t.Fatal(err)
	}
	back, err := ReadWAV(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if back.SampleRate != 16000 || len(back.Samples) != len(ints) {
		t.Fatalf("rate %d, %d samples", back.SampleRate, len(back.Samples))
	}
	for i := range ints {
		if back.Samples[i] != clip.Samples[i] {
			t.Fatalf("sample %d: %v != %v", i, back.Samples[i], clip.Samples[i])
		}
	}
	var second bytes.Buffer
	if err := WriteWAV(&second, back, Int16); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("write → read → write changed the bytes")
	}

	// An independent reader agrees on every integer.
	d := wav.NewDecoder(bytes.NewReader(first.Bytes()))
	buf, err := d.FullPCMBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if d.SampleRate != 16000 || d.NumChans != 1 || d.BitDepth != 16 || len(buf.Data) != len(ints) {
		t.Fatalf("go-audio/wav sees %d Hz × %d ch × %d bits, %d samples", d.SampleRate, d.NumChans, d.BitDepth, len(buf.Data))
	}
	for i, v := range ints {
		if buf.Data[i] != int(v) {
			t.Fatalf("go-audio/wav sample %d = %d, want %d", i, buf.Data[i], v)
		}
	}
}

func TestWriteEncodings(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 1001) // odd: exercises the pad byte for u8
	for i := range x {
		x[i] = float32(rng.Float64()*2 - 1)
	}
	x[0], x[1], x[2] = 1.5, -2, 0.99999
	for _, tc := range []struct {
		enc  Encoding
		step float64 // quantisation step
	}{
		{Uint8, 1.0 / 128}, {Int16, 1.0 / 32768}, {Int24, 1.0 / 8388608}, {Int32, 1.0 / 2147483648}, {Float32, 0},
	} {
		var b bytes.Buffer
		if err := WriteWAV(&b, Clip{Samples: x, SampleRate: 44100}, tc.enc); err != nil {
			t.Fatal(err)
		}
		if b.Len()%2 != 0 {
			t.Fatalf("%v: file of odd length %d (missing pad byte)", tc.enc, b.Len())
		}
		c, err := ReadWAV(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("%v: %v", tc.enc, err)
		}
		if len(c.Samples) != len(x) {
			t.Fatalf("%v: %d samples, want %d", tc.enc, len(c.Samples), len(x))
		}
		for i := range x {
			want := float64(x[i])
			if tc.enc != Float32 {
				want = math.Max(-1, math.Min(want, 1-tc.step))
			}
			if d := math.Abs(float64(c.Samples[i]) - want); d > tc.step/2+1e-7 {
				t.Fatalf("%v: sample %d = %v, want %v ± %v", tc.enc, i, c.Samples[i], want, tc.step/2)
			}
		}
	}
}

func TestStreamingWriter(t *testing.T) {
	x := make([]float32, 3*777)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) / 7))
	}
	f := Format{SampleRate: 24000, Channels: 3, Encoding: Float32}

	// A pipe: sizes stay "unknown" and the reader runs to the end.
	var pipe bytes.Buffer
	w, err := NewWAVWriter(&pipe, f)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(x); i += 3 * 100 {
		if err := w.Write(x[i:min(i+3*100, len(x))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := NewWAVReader(bytes.NewReader(pipe.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if rd.Frames() != -1 {
		t.Fatalf("Frames() = %d for a streamed file, want -1", rd.Frames())
	}
	c, err := rd.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) != 777 {
		t.Fatalf("%d frames, want 777", len(c.Samples))
	}
	for i := range c.Samples {
		want := float32((float64(x[3*i]) + float64(x[3*i+1]) + float64(x[3*i+2])) / 3)
		if c.Samples[i] != want {
			t.Fatalf("frame %d = %v, want %v", i, c.Samples[i], want)
		}
	}

	// A file: Close patches the header to the exact sizes, byte-identical
	// to what a one-shot writer produces.
	path := filepath.Join(t.TempDir(), "s.wav")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	mono := Format{SampleRate: 16000, Channels: 1, Encoding: Int16}
	w, err = NewWAVWriter(file, mono)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(x[:500]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(x[500:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	file.Close()
	got, _ := os.ReadFile(path)
	var want bytes.Buffer
	if err := WriteWAV(&want, Clip{Samples: x, SampleRate: 16000}, Int16); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("patched file (%d bytes) differs from one-shot file (%d bytes)", len(got), want.Len())
	}
}

// TestWriterOnOSPipe: an *os.File on a pipe has a Seek method that fails;
// Close must leave the sizes "unknown" rather than fail, and the bytes that
// came through are a WAV that reads to its end.
func TestWriterOnOSPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- b
	}()
	x := []float32{0, 0.25, -0.5, 0.75, -1}
	w, err := NewWAVWriter(pw, Format{SampleRate: 16000, Channels: 1, Encoding: Int16})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(x); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close on a pipe: %v", err)
	}
	pw.Close()
	c, err := ReadWAV(bytes.NewReader(<-got))
	if err != nil || len(c.Samples) != len(x) {
		t.Fatalf("read back %d samples, %v; want %d", len(c.Samples), err, len(x))
	}
}

// TestStreamHeader: a WAV streamed where it cannot be patched declares
// sox's "unspecified" sizes (data 0x7FFFF000, RIFF 36 more), which sox and
// soxi read as unknown; this package's reader takes those and ffmpeg's
// 0xFFFFFFFF as unknown, reading to the end.
func TestStreamHeader(t *testing.T) {
	x := []float32{0, 0.25, -0.5, 0.75, -1}
	var pipe bytes.Buffer
	w, err := NewWAVWriter(struct{ io.Writer }{&pipe}, S16Mono(24000))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(x); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := pipe.Bytes()
	le := binary.LittleEndian
	if riff, data := le.Uint32(b[4:]), le.Uint32(b[40:]); riff != 0x7FFFF024 || data != 0x7FFFF000 {
		t.Fatalf("RIFF size %#x, data size %#x; want sox's 0x7ffff024, 0x7ffff000", riff, data)
	}
	for _, c := range []struct {
		name       string
		riff, data uint32
	}{{"sox's unspecified", 0x7FFFF024, 0x7FFFF000}, {"ffmpeg's unknown", 0xFFFFFFFF, 0xFFFFFFFF}} {
		h := bytes.Clone(b)
		le.PutUint32(h[4:], c.riff)
		le.PutUint32(h[40:], c.data)
		rd, err := NewWAVReader(bytes.NewReader(h))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := rd.ReadAll()
		if rd.Frames() != -1 || err != nil || len(got.Samples) != len(x) {
			t.Errorf("%s: Frames() %d, read %d samples, %v; want unknown, %d", c.name, rd.Frames(), len(got.Samples), err, len(x))
		}
	}
}

// TestRawWriter: raw output is the samples alone, little-endian, the same
// bytes a WAV holds after its header.
func TestRawWriter(t *testing.T) {
	x := []float32{0, 0.25, -0.5, 0.75, -1, 1}
	var raw, wav bytes.Buffer
	w, err := NewRawWriter(&raw, S16Mono(24000))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(x[:2]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(x[2:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := WriteWAV(&wav, Clip{Samples: x, SampleRate: 24000}, Int16); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw.Bytes(), wav.Bytes()[44:]) {
		t.Errorf("raw % x, want the WAV's data % x", raw.Bytes(), wav.Bytes()[44:])
	}
	c, err := ReadRaw(bytes.NewReader(raw.Bytes()), S16Mono(24000))
	if err != nil || len(c.Samples) != len(x) {
		t.Errorf("ReadRaw: %d samples, %v", len(c.Samples), err)
	}
	if _, err := NewRawWriter(&raw, Format{SampleRate: 0, Channels: 1, Encoding: Int16}); err == nil {
		t.Error("NewRawWriter accepted a 0 Hz format")
	}
}

func TestWriteRefusesBadInput(t *testing.T) {
	var b bytes.Buffer
	if err := WriteWAV(&b, Clip{Samples: []float32{0, float32(math.NaN())}, SampleRate: 16000}, Int16); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN: err = %v, want ErrNotFinite", err)
	}
	if err := WriteWAV(&b, Clip{Samples: []float32{0}, SampleRate: 0}, Int16); !errors.Is(err, ErrBadFormat) {
		t.Errorf("rate 0: err = %v, want ErrBadFormat", err)
	}
	w, err := NewWAVWriter(&b, Format{SampleRate: 8000, Channels: 2, Encoding: Int16})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]float32{1, 2, 3}); !errors.Is(err, ErrBadFormat) {
		t.Errorf("3 samples on 2 channels: err = %v, want ErrBadFormat", err)
	}
	if err := w.Write([]float32{float32(math.Inf(1)), 0}); !errors.Is(err, ErrNotFinite) {
		t.Errorf("Inf: err = %v, want ErrNotFinite", err)
	}
	if err := WriteWAVFile(filepath.Join(t.TempDir(), "no", "such", "dir.wav"), Clip{Samples: []float32{0}, SampleRate: 8000}, Int16); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestWAVFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.wav")
	c := Clip{Samples: []float32{0, 0.5, -0.5, 2}, SampleRate: 22050}
	if err := WriteWAVFile(path, c, Float32); err != nil {
		t.Fatal(err)
	}
	back, err := ReadWAVFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.SampleRate != c.SampleRate || len(back.Samples) != 4 || back.Samples[3] != 2 {
		t.Fatalf("got %+v", back)
	}
	if _, err := ReadWAVFile(filepath.Join(t.TempDir(), "missing.wav")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
}
