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
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/tensorforge/forge/internal/testenv"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"
)

// sharedFile returns the path of a file under ../shared, skipping loudly
// when the checkout has no ../shared beside it.
func sharedFile(t testing.TB, rel string) string { return testenv.Shared(t, rel) }

// s16 decodes little-endian int16 PCM the plain way, as the goldens did.
func s16(b []byte) []float32 {
	out := make([]float32, len(b)/2)
	for i := range out {
		out[i] = float32(int16(binary.LittleEndian.Uint16(b[2*i:]))) / 32768
	}
	return out
}

func TestReadSharedSpeech(t *testing.T) {
	wavPath := sharedFile(t, "data/jfk.wav")
	c, err := ReadWAVFile(wavPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate != 16000 {
		t.Fatalf("rate %d, want 16000", c.SampleRate)
	}
	// jfk.wav carries a LIST chunk before data: find the data chunk by hand.
	raw, _ := os.ReadFile(wavPath)
	i := bytes.Index(raw, []byte("data"))
	size := int(binary.LittleEndian.Uint32(raw[i+4:]))
	want := s16(raw[i+8 : i+8+size])
	if len(c.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(c.Samples), len(want))
	}
	for k := range want {
		if c.Samples[k] != want[k] {
			t.Fatalf("sample %d = %v, want %v (s/32768 exactly)", k, c.Samples[k], want[k])
		}
	}

	// goforward.raw is goforward.wav without its header.
	rawPath := sharedFile(t, "data/goforward.raw")
	r, err := ReadRawFile(rawPath, S16Mono(16000))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ReadWAVFile(sharedFile(t, "golden/audio/goforward.wav"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Samples) != len(w.Samples) {
		t.Fatalf("raw %d samples, wav %d", len(r.Samples), len(w.Samples))
	}
	for k := range r.Samples {
		if r.Samples[k] != w.Samples[k] {
			t.Fatalf("raw and wav differ at sample %d", k)
		}
	}
}

// goAudioFile encodes interleaved integer frames with go-audio/wav's own
// encoder: an independent writer for the reader tests.
func goAudioFile(t *testing.T, rate, bits, channels int, data []int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := wav.NewEncoder(f, rate, bits, channels, 1)
	buf := &goaudio.IntBuffer{Data: data, Format: &goaudio.Format{NumChannels: channels, SampleRate: rate}, SourceBitDepth: bits}
	if err := enc.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadEncodingsAndChannels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		bits, channels int
		lo, hi         int // integer range of one sample
		zero           int // the value meaning silence
		full           float64
	}{
		{8, 1, 0, 255, 128, 128},
		{8, 2, 0, 255, 128, 128},
		{16, 1, -32768, 32767, 0, 32768},
		{16, 2, -32768, 32767, 0, 32768},
		{16, 6, -32768, 32767, 0, 32768},
		{24, 1, -8388608, 8388607, 0, 8388608},
		{24, 3, -8388608, 8388607, 0, 8388608},
		{32, 1, math.MinInt32, math.MaxInt32, 0, 2147483648},
		{32, 2, math.MinInt32, math.MaxInt32, 0, 2147483648},
	} {
		const frames = 1001
		data := make([]int, frames*tc.channels)
		for i := range data {
			data[i] = tc.lo + int(rng.Int64N(int64(tc.hi-tc.lo)+1))
		}
		data[0], data[1%len(data)] = tc.lo, tc.hi
		b := goAudioFile(t, 22050, tc.bits, tc.channels, data)
		c, err := ReadWAV(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%d-bit × %d: %v", tc.bits, tc.channels, err)
		}
		if c.SampleRate != 22050 || len(c.Samples) != frames {
			t.Fatalf("%d-bit × %d: rate %d, %d samples", tc.bits, tc.channels, c.SampleRate, len(c.Samples))
		}
		for i := range frames {
			var sum float64
			for ch := range tc.channels {
				sum += float64(data[i*tc.channels+ch] - tc.zero)
			}
			want := sum / tc.full / float64(tc.channels)
			got := float64(c.Samples[i])
			if math.Abs(got-want) > 1e-7 || got < -1 || got >= 1 {
				t.Fatalf("%d-bit × %d: frame %d = %v, want %v in [-1, 1)", tc.bits, tc.channels, i, got, want)
			}
		}
	}
}

// floatWAV builds a 32-bit float WAV by hand, optionally as
// WAVE_FORMAT_EXTENSIBLE.
func floatWAV(rate, channels int, samples []float32, extensible bool) []byte {
	le := binary.LittleEndian
	var fmtChunk []byte
	fmtChunk = le.AppendUint16(fmtChunk, 3)
	if extensible {
		fmtChunk[0], fmtChunk[1] = 0xFE, 0xFF
	}
	fmtChunk = le.AppendUint16(fmtChunk, uint16(channels))
	fmtChunk = le.AppendUint32(fmtChunk, uint32(rate))
	fmtChunk = le.AppendUint32(fmtChunk, uint32(rate*4*channels))
	fmtChunk = le.AppendUint16(fmtChunk, uint16(4*channels))
	fmtChunk = le.AppendUint16(fmtChunk, 32)
	if extensible {
		fmtChunk = le.AppendUint16(fmtChunk, 22)
		fmtChunk = le.AppendUint16(fmtChunk, 32)
		fmtChunk = le.AppendUint32(fmtChunk, 0)
		fmtChunk = le.AppendUint16(fmtChunk, 3)
		fmtChunk = append(fmtChunk, ksDataFormatSuffix...)
	}
	var data []byte
	for _, s := range samples {
		data = le.AppendUint32(data, math.Float32bits(s))
	}
	return riffFile(chunk("fmt ", fmtChunk), chunk("data", data))
}

func chunk(id string, body []byte) []byte {
	b := append([]byte(id), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...)
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func riffFile(chunks ...[]byte) []byte {
	body := []byte("WAVE")
	for _, c := range chunks {
		body = append(body, c...)
	}
	return append(append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...), body...)
}

func TestReadFloat(t *testing.T) {
	samples := []float32{0, 0.5, -0.25, 1.5, -2, 1e-30, float32(math.Pi)}
	for _, ext := range []bool{false, true} {
		c, err := ReadWAV(bytes.NewReader(floatWAV(24000, 1, samples, ext)))
		if err != nil {
			t.Fatalf("extensible=%v: %v", ext, err)
		}
		for i := range samples {
			if c.Samples[i] != samples[i] {
				t.Fatalf("extensible=%v: sample %d = %v, want %v (float passes through)", ext, i, c.Samples[i], samples[i])
			}
		}
	}
	c, err := ReadWAV(bytes.NewReader(floatWAV(8000, 2, []float32{0.5, 0.25, -1, 1}, false)))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) != 2 || c.Samples[0] != 0.375 || c.Samples[1] != 0 {
		t.Fatalf("stereo float down-mix = %v, want [0.375 0]", c.Samples)
	}
}

func TestReadExtensible24In32(t *testing.T) {
	le := binary.LittleEndian
	var f []byte
	f = le.AppendUint16(f, tagExtensible)
	f = le.AppendUint16(f, 1)
	f = le.AppendUint32(f, 48000)
	f = le.AppendUint32(f, 48000*4)
	f = le.AppendUint16(f, 4)
	f = le.AppendUint16(f, 32)
	f = le.AppendUint16(f, 22)
	f = le.AppendUint16(f, 24) // 24 valid bits, left-justified
	f = le.AppendUint32(f, 4)
	f = le.AppendUint16(f, 1)
	f = append(f, ksDataFormatSuffix...)
	var d []byte
	for _, v := range []int32{0x400000 << 8, -0x800000 << 8} {
		d = le.AppendUint32(d, uint32(v))
	}
	c, err := ReadWAV(bytes.NewReader(riffFile(chunk("fmt ", f), chunk("data", d))))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Samples) != 2 || c.Samples[0] != 0.5 || c.Samples[1] != -1 {
		t.Fatalf("got %v, want [0.5 -1]", c.Samples)
	}
}

func pcmFmt(tag, channels uint16, rate uint32, blockAlign, bits uint16) []byte {
	le := binary.LittleEndian
	var f []byte
	f = le.AppendUint16(f, tag)
	f = le.AppendUint16(f, channels)
	f = le.AppendUint32(f, rate)
	f = le.AppendUint32(f, rate*uint32(blockAlign))
	f = le.AppendUint16(f, blockAlign)
	f = le.AppendUint16(f, bits)
	return f
}

func TestReadErrors(t *testing.T) {
	good := pcmFmt(1, 1, 16000, 2, 16)
	samples := make([]byte, 20)
	valid := riffFile(chunk("fmt ", good), chunk("data", samples))
	hugeList := append([]byte("LIST"), 0xF0, 0xFF, 0xFF, 0x7F)
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"three bytes of magic", []byte("RIF"), ErrTruncated},
		{"header only", valid[:12], ErrTruncated},
		{"inside fmt", valid[:30], ErrTruncated},
		{"no data chunk", riffFile(chunk("fmt ", good)), ErrTruncated},
		{"text file", []byte("hello world, this is not audio"), ErrNotWAV},
		{"RIFX", append([]byte("RIFX"), valid[4:]...), ErrNotWAV},
		{"RF64", append([]byte("RF64"), valid[4:]...), ErrNotWAV},
		{"AVI", append(append([]byte("RIFF"), valid[4:8]...), []byte("AVI ")...), ErrNotWAV},
		{"ADPCM", riffFile(chunk("fmt ", pcmFmt(2, 1, 16000, 256, 4)), chunk("data", samples)), ErrUnsupportedCodec},
		{"mu-law", riffFile(chunk("fmt ", pcmFmt(7, 1, 8000, 1, 8)), chunk("data", samples)), ErrUnsupportedCodec},
		{"MP3", riffFile(chunk("fmt ", pcmFmt(0x55, 2, 44100, 1, 0)), chunk("data", samples)), ErrUnsupportedCodec},
		{"float64", riffFile(chunk("fmt ", pcmFmt(3, 1, 16000, 8, 64)), chunk("data", samples)), ErrUnsupportedCodec},
		{"zero channels", riffFile(chunk("fmt ", pcmFmt(1, 0, 16000, 2, 16)), chunk("data", samples)), ErrNoChannels},
		{"65535 channels", riffFile(chunk("fmt ", pcmFmt(1, 65535, 16000, 65535, 8)), chunk("data", samples)), ErrTooLarge},
		{"4 GHz", riffFile(chunk("fmt ", pcmFmt(1, 1, 0xFFFFFFFF, 2, 16)), chunk("data", samples)), ErrSampleRate},
		{"384001 Hz", riffFile(chunk("fmt ", pcmFmt(1, 1, MaxSampleRate+1, 2, 16)), chunk("data", samples)), ErrSampleRate},
		{"rate 0", riffFile(chunk("fmt ", pcmFmt(1, 1, 0, 2, 16)), chunk("data", samples)), ErrSampleRate},
		{"1 Hz", riffFile(chunk("fmt ", pcmFmt(1, 1, 1, 2, 16)), chunk("data", samples)), ErrSampleRate},
		{"999 Hz", riffFile(chunk("fmt ", pcmFmt(1, 1, MinSampleRate-1, 2, 16)), chunk("data", samples)), ErrSampleRate},
		{"0 bits", riffFile(chunk("fmt ", pcmFmt(1, 1, 16000, 2, 0)), chunk("data", samples)), ErrBadHeader},
		{"block align", riffFile(chunk("fmt ", pcmFmt(1, 2, 16000, 3, 16)), chunk("data", samples)), ErrBadHeader},
		{"fmt too short", riffFile(chunk("fmt ", good[:12]), chunk("data", samples)), ErrBadHeader},
		{"fmt huge", riffFile(chunk("fmt ", make([]byte, 5000)), chunk("data", samples)), ErrTooLarge},
		{"two fmt", riffFile(chunk("fmt ", good), chunk("fmt ", good), chunk("data", samples)), ErrBadHeader},
		{"data before fmt", riffFile(chunk("data", samples), chunk("fmt ", good)), ErrBadHeader},
		{"extensible short", riffFile(chunk("fmt ", append(pcmFmt(0xFFFE, 1, 16000, 2, 16), 0, 0)), chunk("data", samples)), ErrBadHeader},
		{"huge LIST", riffFile(chunk("fmt ", good), hugeList), ErrTruncated},
		{"data cut short", valid[:len(valid)-5], ErrTruncated},
		{"partial frame", riffFile(chunk("fmt ", good), append([]byte("data\xff\xff\xff\xff"), 1, 2, 3)), ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadWAV(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTruncatedKeepsWholeFrames(t *testing.T) {
	data := make([]byte, 200)
	for i := range data {
		data[i] = byte(i)
	}
	b := riffFile(chunk("fmt ", pcmFmt(1, 1, 16000, 2, 16)), chunk("data", data))
	b = b[:len(b)-51] // 149 of 200 data bytes remain: 74 whole samples
	c, err := ReadWAV(bytes.NewReader(b))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	want := s16(data[:148])
	if len(c.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(c.Samples), len(want))
	}
	for i := range want {
		if c.Samples[i] != want[i] {
			t.Fatalf("sample %d = %v, want %v", i, c.Samples[i], want[i])
		}
	}
}

// TestSampleRateLimits: the edges of MinSampleRate..MaxSampleRate read;
// one hertz beyond either is refused (TestReadErrors), whatever else the
// header says.
func TestSampleRateLimits(t *testing.T) {
	for _, rate := range []uint32{MinSampleRate, 8000, 16000, 48000, MaxSampleRate} {
		b := riffFile(chunk("fmt ", pcmFmt(1, 1, rate, 2, 16)), chunk("data", make([]byte, 8)))
		c, err := ReadWAV(bytes.NewReader(b))
		if err != nil || c.SampleRate != int(rate) || len(c.Samples) != 4 {
			t.Errorf("%d Hz: %d Hz × %d samples, %v; want 4 samples", rate, c.SampleRate, len(c.Samples), err)
		}
	}
}

// TestAbsurdHeaderCostsItsRealSize: a 32 KB file whose header declares
// 1 Hz is refused by name before any sample is read (at 16 kHz it would be
// hours of audio), and one whose data chunk declares 4 GiB costs memory in
// proportion to the bytes really there, keeping them all.
func TestAbsurdHeaderCostsItsRealSize(t *testing.T) {
	body := make([]byte, 32<<10)
	dir := t.TempDir()

	oneHz := filepath.Join(dir, "1hz.wav")
	if err := os.WriteFile(oneHz, riffFile(chunk("fmt ", pcmFmt(1, 1, 1, 2, 16)), chunk("data", body)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWAVFile(oneHz); !errors.Is(err, ErrSampleRate) {
		t.Errorf("1 Hz header: err = %v, want ErrSampleRate", err)
	}

	huge := append(riffFile(chunk("fmt ", pcmFmt(1, 1, 16000, 2, 16))), "data\xf0\xff\xff\xff"...)
	huge = append(huge, body...)
	path := filepath.Join(dir, "huge.wav")
	if err := os.WriteFile(path, huge, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		read func() (Clip, error)
	}{
		{"file", func() (Clip, error) { return ReadWAVFile(path) }},
		{"bytes", func() (Clip, error) { return ReadWAV(bytes.NewReader(huge)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c, err := tc.read()
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTruncated) || len(c.Samples) != len(body)/2 {
				t.Fatalf("%d samples, %v; want %d and ErrTruncated", len(c.Samples), err, len(body)/2)
			}
			// Samples (4 bytes per 2 read) plus one read chunk and
			// go-audio/wav's buffers; the header alone would ask for 8 GiB.
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(1<<20); got > limit {
				t.Errorf("allocated %d bytes for %d bytes of samples, want at most %d", got, len(body), limit)
			}
		})
	}
}

// TestStreamingFrames reads in frames of N from readers that return short
// reads, and checks the frames concatenate to the whole-file result.
func TestStreamingFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]int, 2*5003)
	for i := range data {
		data[i] = int(rng.Int32N(65536)) - 32768
	}
	b := goAudioFile(t, 16000, 16, 2, data)
	whole, err := ReadWAV(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    func() io.Reader
		n    int
	}{
		{"one byte at a time, 512", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }, 512},
		{"half reads, 160", func() io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }, 160},
		{"whole, 1", func() io.Reader { return bytes.NewReader(b) }, 1},
		{"whole, 100000", func() io.Reader { return bytes.NewReader(b) }, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := NewWAVReader(tc.r())
			if err != nil {
				t.Fatal(err)
			}
			if rd.Frames() != int64(len(whole.Samples)) {
				t.Fatalf("Frames() = %d, want %d", rd.Frames(), len(whole.Samples))
			}
			var got []float32
			frame := make([]float32, tc.n)
			for {
				n, err := rd.Read(frame)
				got = append(got, frame[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if n != tc.n && len(got) != len(whole.Samples) {
					t.Fatalf("short frame of %d before the end", n)
				}
			}
			if len(got) != len(whole.Samples) {
				t.Fatalf("%d samples, want %d", len(got), len(whole.Samples))
			}
			for i := range got {
				if got[i] != whole.Samples[i] {
					t.Fatalf("sample %d differs", i)
				}
			}
		})
	}
}

type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("disk on fire")
	}
	return n, err
}

func TestReadPropagatesIOError(t *testing.T) {
	b := riffFile(chunk("fmt ", pcmFmt(1, 1, 16000, 2, 16)), chunk("data", make([]byte, 64)))
	_, err := ReadWAV(failingReader{bytes.NewReader(b[:len(b)-10])})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("disk on fire")) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
}

func TestRawFormatValidation(t *testing.T) {
	for _, f := range []Format{
		{SampleRate: 0, Channels: 1, Encoding: Int16},
		{SampleRate: MinSampleRate - 1, Channels: 1, Encoding: Int16},
		{SampleRate: MaxSampleRate + 1, Channels: 1, Encoding: Int16},
		{SampleRate: 16000, Channels: 0, Encoding: Int16},
		{SampleRate: 16000, Channels: 1, Encoding: 0},
		{SampleRate: 16000, Channels: 1000, Encoding: Int16},
	} {
		if _, err := NewRawReader(bytes.NewReader(nil), f); !errors.Is(err, ErrBadFormat) {
			t.Errorf("%+v: err = %v, want ErrBadFormat", f, err)
		}
	}
	c, err := ReadRaw(bytes.NewReader([]byte{0, 0x80, 0xff, 0x7f, 1}), S16Mono(8000))
	if !errors.Is(err, ErrTruncated) || len(c.Samples) != 2 || c.Samples[0] != -1 {
		t.Fatalf("odd-length raw: %v, %v; want 2 samples and ErrTruncated", c.Samples, err)
	}
}
