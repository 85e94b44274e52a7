package audio

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
)

// fixture is a clip made by a reference encoder (testenv.AudioFixture: no
// encoded audio is committed) from a source the test can rebuild: a cut of
// ../shared/data/jfk.wav or testenv.TestSignal.
type fixture struct {
	name   string
	source func(t *testing.T) (pcm []int, rate, channels int)
	lossy  bool
	// minSNR is the least signal-to-noise ratio (dB) of the decoded
	// samples against the source, for lossy fixtures.
	minSNR float64
	lag    int // where the decoded audio lines up with the source
}

// jfkCut returns the first seconds of jfk.wav as 16-bit integers.
func jfkCut(seconds float64) func(t *testing.T) ([]int, int, int) {
	return func(t *testing.T) ([]int, int, int) {
		c, err := ReadWAVFile(sharedFile(t, "data/jfk.wav"))
		if err != nil {
			t.Fatal(err)
		}
		n := int(seconds * float64(c.SampleRate))
		out := make([]int, n)
		for i, s := range c.Samples[:n] {
			out[i] = int(s * 32768)
		}
		return out, c.SampleRate, 1
	}
}

// testSignal is testenv.TestSignal as a fixture source.
func testSignal(rate int, seconds float64) func(t *testing.T) ([]int, int, int) {
	return func(*testing.T) ([]int, int, int) { return testenv.TestSignal(rate, seconds), rate, 2 }
}

// The fixtures. The MP3 and Vorbis thresholds are set 4 dB under what was
// measured here (MP3 through go-mp3: jfk at 48 kbit/s: 25.5 dB; at 32
// kbit/s: 23.0 dB; the tones at 128 kbit/s: 26.0 dB). That is the codec's loss, not the decoder's:
// LAME's own decoder (lame --decode) gives the same figures, and go-mp3's
// output differs from it by at most 1 LSB (79.9 and 77.8 dB). A decoding
// fault (a sample of lag, a wrong channel, a dropped frame) brings the
// figure near or below 0 dB, and the best lag is checked as well.
var fixtures = []fixture{
	{name: "jfk-1s.flac", source: jfkCut(1)},
	{name: "tones-stereo-44k.flac", source: testSignal(44100, 0.5)},
	{name: "jfk-2s-48k.mp3", source: jfkCut(2), lossy: true, minSNR: 21.5},
	// At 32 kbit/s LAME leaves out the Info frame: the encoder's delay of
	// 576 samples cannot be known and stays in the decoded audio.
	{name: "jfk-2s-32k-notag.mp3", source: jfkCut(2), lossy: true, minSNR: 19, lag: 576},
	{name: "tones-stereo-44k.mp3", source: testSignal(44100, 0.5), lossy: true, minSNR: 22},
	// Ogg/Vorbis (oggenc -q 4): measured 22.1 dB (jfk, 16 kHz mono, 34
	// kbit/s), 39.6 dB (the tones at 44.1 and 48 kHz), all three equal to
	// what libvorbis's oggdec gives; ours and oggdec's samples differ by
	// its 16-bit rounding only (84–86 dB). Gapless: the granule positions
	// trim the first and last packets, so the lengths match exactly.
	{name: "jfk-11s.ogg", source: jfkCut(11), lossy: true, minSNR: 18},
	{name: "tones-stereo-44k.ogg", source: testSignal(44100, 0.5), lossy: true, minSNR: 35},
	{name: "tones-stereo-48k.ogg", source: testSignal(48000, 0.5), lossy: true, minSNR: 35},
}

// containerOf is the format a fixture's name says it is.
func containerOf(name string) Container {
	switch {
	case strings.HasSuffix(name, ".mp3"):
		return MP3
	case strings.HasSuffix(name, ".ogg"):
		return OggVorbis
	}
	return FLAC
}

// mono down-mixes interleaved integers as the Reader does, scaled by 1/full.
func mono(pcm []int, channels int, full float64) []float64 {
	out := make([]float64, len(pcm)/channels)
	for i := range out {
		var s float64
		for _, v := range pcm[i*channels : (i+1)*channels] {
			s += float64(v)
		}
		out[i] = s / float64(channels) / full
	}
	return out
}

// snr is the signal-to-noise ratio of got against want (dB), where got
// lines up with want shifted by lag samples.
func snr(want []float64, got []float32, lag int) float64 {
	var sig, noise float64
	for i, w := range want {
		if i+lag < 0 {
			continue
		}
		if i+lag >= len(got) {
			break
		}
		d := float64(got[i+lag]) - w
		sig += w * w
		noise += d * d
	}
	return 10 * math.Log10(sig/noise)
}

func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			pcm, rate, ch := fx.source(t)
			f, err := os.Open(testenv.AudioFixture(t, fx.name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rd, err := Open(f)
			if err != nil {
				t.Fatal(err)
			}
			wantC := containerOf(fx.name)
			if rd.Container() != wantC || rd.SampleRate() != rate || rd.Format().Channels != ch {
				t.Fatalf("%v %d Hz × %d, want %v %d Hz × %d", rd.Container(), rd.SampleRate(), rd.Format().Channels, wantC, rate, ch)
			}
			c, err := rd.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			want := mono(pcm, ch, 32768)
			if !fx.lossy {
				if rd.Frames() != int64(len(want)) || len(c.Samples) != len(want) {
					t.Fatalf("%d samples (header: %d), want %d", len(c.Samples), rd.Frames(), len(want))
				}
				for i := range want {
					if float64(c.Samples[i]) != float64(float32(want[i])) {
						t.Fatalf("sample %d = %v, want %v: lossless decoding must be bit-exact", i, c.Samples[i], want[i])
					}
				}
				return
			}
			if fx.lag == 0 && len(c.Samples) != len(want) {
				t.Fatalf("%d samples, want %d (gapless: delay and padding trimmed)", len(c.Samples), len(want))
			}
			best, bestLag := math.Inf(-1), 0
			for lag := fx.lag - 3; lag <= fx.lag+3; lag++ {
				if s := snr(want, c.Samples, lag); s > best {
					best, bestLag = s, lag
				}
			}
			t.Logf("SNR %.1f dB at lag %d", best, bestLag)
			if bestLag != fx.lag || best < fx.minSNR {
				t.Fatalf("best SNR %.1f dB at lag %d, want ≥ %.0f dB at lag %d", best, bestLag, fx.minSNR, fx.lag)
			}
		})
	}
}

// encodeFLAC encodes interleaved samples with mewkiz/flac's own encoder
// (verbatim subframes analysed into fixed/LPC ones), so that bit depths
// and layouts need no committed file.
func encodeFLAC(t testing.TB, rate, bits, channels int, pcm []int, block int) []byte {
	t.Helper()
	var b bytes.Buffer
	n := len(pcm) / channels
	info := &meta.StreamInfo{BlockSizeMin: uint16(block), BlockSizeMax: uint16(block), SampleRate: uint32(rate),
		NChannels: uint8(channels), BitsPerSample: uint8(bits), NSamples: uint64(n)}
	enc, err := flac.NewEncoder(&b, info)
	if err != nil {
		t.Fatal(err)
	}
	layouts := map[int]frame.Channels{1: frame.ChannelsMono, 2: frame.ChannelsLR, 3: frame.ChannelsLRC}
	for start := 0; start < n; start += block {
		end := min(start+block, n)
		fr := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(end - start),
			SampleRate: uint32(rate), Channels: layouts[channels], BitsPerSample: uint8(bits)}}
		for c := range channels {
			s := make([]int32, end-start)
			for i := range s {
				s[i] = int32(pcm[(start+i)*channels+c])
			}
			fr.Subframes = append(fr.Subframes, &frame.Subframe{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: s, NSamples: len(s)})
		}
		if err := enc.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFLACBitDepths(t *testing.T) {
	for _, tc := range []struct{ bits, channels, rate int }{
		{8, 1, 8000}, {12, 2, 22050}, {16, 3, 16000}, {20, 1, 48000}, {24, 2, 96000},
	} {
		full := 1 << (tc.bits - 1)
		n := 3000
		pcm := make([]int, n*tc.channels)
		for i := range pcm {
			// Every value from -full to full-1 over a sweep, channels apart.
			pcm[i] = (i*7919+i/tc.channels*31)%(2*full) - full
		}
		b := encodeFLAC(t, tc.rate, tc.bits, tc.channels, pcm, 1024)
		c, err := Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%d-bit × %d: %v", tc.bits, tc.channels, err)
		}
		want := mono(pcm, tc.channels, float64(full))
		if c.SampleRate != tc.rate || len(c.Samples) != n {
			t.Fatalf("%d-bit × %d: %d Hz × %d, want %d Hz × %d", tc.bits, tc.channels, c.SampleRate, len(c.Samples), tc.rate, n)
		}
		for i := range want {
			if float64(c.Samples[i]) != float64(float32(want[i])) {
				t.Fatalf("%d-bit × %d: sample %d = %v, want %v", tc.bits, tc.channels, i, c.Samples[i], want[i])
			}
		}
	}
}

// TestTruncatedCompressed cuts each fixture and checks what WAV does: an
// error wrapping ErrTruncated, and every sample before the cut, equal to
// the whole file's.
func TestTruncatedCompressed(t *testing.T) {
	for _, fx := range fixtures {
		full, err := os.ReadFile(testenv.AudioFixture(t, fx.name))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Decode(bytes.NewReader(full))
		if err != nil {
			t.Fatal(err)
		}
		// Not at a frame boundary: jfk-2s-32k-notag.mp3 has no frame count, so
		// a cut between its frames cannot be told from its end.
		for _, cut := range []int{1, 3, 20, 60, len(full)/3 + 5, len(full)/2 + 5, len(full) - 1} {
			c, err := Decode(bytes.NewReader(full[:cut]))
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s cut at %d of %d bytes: %v, want ErrTruncated", fx.name, cut, len(full), err)
			}
			if len(c.Samples) >= len(whole.Samples) {
				t.Fatalf("%s cut at %d: %d samples of %d", fx.name, cut, len(c.Samples), len(whole.Samples))
			}
			for i, s := range c.Samples {
				if s != whole.Samples[i] {
					t.Fatalf("%s cut at %d: sample %d = %v, the whole file's %v", fx.name, cut, i, s, whole.Samples[i])
				}
			}
		}
	}
}

// TestFLACCleanCutAtFrame: a FLAC stream that ends between two frames
// before the sample count STREAMINFO declares is truncated, too.
func TestFLACCleanCutAtFrame(t *testing.T) {
	pcm := make([]int, 4096)
	for i := range pcm {
		pcm[i] = i%512 - 256
	}
	full := encodeFLAC(t, 16000, 16, 1, pcm, 1024)
	// A stream of the first block alone has a header of the same length
	// and the same first frame, so full cut at its length ends between
	// frames 0 and 1 while STREAMINFO still counts 4096 samples.
	one := encodeFLAC(t, 16000, 16, 1, pcm[:1024], 1024)
	c, err := Decode(bytes.NewReader(full[:len(one)]))
	if !errors.Is(err, ErrTruncated) || len(c.Samples) != 1024 {
		t.Fatalf("%d samples, %v; want 1024 and ErrTruncated", len(c.Samples), err)
	}
}

// TestMP3LAMECountCut: an MP3 whose LAME header counts more frames than
// the file holds, though it ends at a frame boundary, is truncated.
func TestMP3LAMECountCut(t *testing.T) {
	full, err := os.ReadFile(testenv.AudioFixture(t, "jfk-2s-48k.mp3"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseMPEGHeader(uint32(full[0])<<24 | uint32(full[1])<<16 | uint32(full[2])<<8 | uint32(full[3]))
	if err != nil {
		t.Fatal(err)
	}
	// Walk to the start of the fifth frame.
	off := 0
	for range 5 {
		fh, err := parseMPEGHeader(uint32(full[off])<<24 | uint32(full[off+1])<<16 | uint32(full[off+2])<<8 | uint32(full[off+3]))
		if err != nil {
			t.Fatalf("frame at %d: %v", off, err)
		}
		off += fh.frameLen
	}
	c, err := Decode(bytes.NewReader(full[:off]))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("%v, want ErrTruncated", err)
	}
	if max := 4 * h.samplesPerFrame(); len(c.Samples) > max {
		t.Fatalf("%d samples from 4 audio frames (at most %d)", len(c.Samples), max)
	}
}

// oggFirstPage returns the first page of an Ogg stream whose first packet is p.
func oggFirstPage(p string) []byte {
	h := []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01")
	return append(append(h, byte(len(p))), p...)
}

func TestOpenNamesFormats(t *testing.T) {
	id3 := "ID3\x04\x00\x00\x00\x00\x00\x05abcde"
	for _, tc := range []struct {
		name string
		in   []byte
		want error
		msg  string // the error must contain this
	}{
		{"m4a", []byte("\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00isomiso2"), ErrUnsupportedCodec, `AAC/MP4 (ftyp "M4A ") is not supported`},
		{"vorbis cut after its first page", oggFirstPage("\x01vorbis\x00\x00\x00\x00\x02\x44\xac"), ErrTruncated, "ends after its page 0 (byte 42) without an end-of-stream page"},
		{"vorbis then garbage", append(oggFirstPage("\x01vorbis\x00\x00\x00\x00\x02\x44\xac"), "OggS\x00\x00garbage garbage garbage"...), ErrTruncated, "inside the Ogg page at byte 42"},
		{"vorbis then junk", append(oggFirstPage("\x01vorbis\x00\x00\x00\x00\x02\x44\xac"), "junk junk junk junk junk junk"...), ErrCorrupt, "no page at byte 42"},
		{"vorbis, bad version", append(oggFirstPage("\x01vorbis\x00\x00\x00\x00\x02\x44\xac"), "OggS\x01\x00garbage garbage garbage"...), ErrCorrupt, "structure version 1"},
		{"opus", oggFirstPage("OpusHead\x01\x02\x38\x01"), ErrUnsupportedCodec, "Ogg/Opus is not supported: no pure-Go Opus decoder is built in"},
		{"ogg flac", oggFirstPage("\x7fFLAC\x01\x00\x00\x01fLaC"), ErrUnsupportedCodec, "Ogg/FLAC is not supported"},
		{"speex", oggFirstPage("Speex   1.2"), ErrUnsupportedCodec, "Ogg/Speex is not supported"},
		{"theora", oggFirstPage("\x80theora\x03\x02"), ErrUnsupportedCodec, "Ogg/Theora (video) is not supported"},
		{"skeleton", oggFirstPage("fishead\x00\x03\x00"), ErrUnsupportedCodec, "Ogg (a Skeleton stream first) is not supported"},
		{"other ogg", oggFirstPage("\x01\x02\x03\x04\x05\x06\x07\x08\x09"), ErrUnsupportedCodec, "Ogg (codec unknown: the first packet starts with bytes 01 02 03 04 05 06 07 08) is not supported"},
		{"ogg cut", []byte("OggS\x00\x02\x00\x00"), ErrTruncated, "before the first Ogg packet names its codec"},
		{"aiff", []byte("FORM\x00\x00\x10\x00AIFFCOMM"), ErrUnsupportedCodec, "AIFF is not supported"},
		{"adts", []byte("\xff\xf1\x50\x80\x02\x1f\xfc"), ErrUnsupportedCodec, "AAC (ADTS) is not supported"},
		{"mp2", []byte("\xff\xfd\x94\x00\x00\x00\x00\x00"), ErrUnsupportedCodec, "Layer I/II"},
		{"webm", []byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81"), ErrUnsupportedCodec, "Matroska/WebM is not supported"},
		{"id3 then aac", []byte(id3 + "\xff\xf1\x50\x80\x02\x1f\xfc"), ErrUnsupportedCodec, "AAC (ADTS)"},
		{"text", []byte("hello, world\n"), ErrUnknownFormat, `starts with bytes 68 65 6c 6c 6f 2c 20 77 ("hello, w")`},
		{"binary", []byte{0, 1, 2, 0xfe, 0xff, 9, 9, 9, 9, 9, 9, 9, 9}, ErrUnknownFormat, "starts with bytes 00 01 02 fe ff 09 09 09;"},
		{"id3 then junk", []byte(id3 + "junk junk junk"), ErrUnknownFormat, "after a 15-byte ID3v2 tag"},
		{"empty", nil, ErrTruncated, "empty input"},
		{"riff prefix", []byte("RIF"), ErrTruncated, "inside a WAV header"},
		{"flac prefix", []byte("fLa"), ErrTruncated, "inside a FLAC header"},
		{"id3 only", []byte(id3), ErrTruncated, "after a 15-byte ID3v2 tag"},
		{"id3 cut", []byte(id3[:12]), ErrTruncated, "ID3v2 tag declares 15 bytes"},
		{"flac header cut", []byte("fLaC\x00\x00\x00\x22\x10\x00"), ErrTruncated, "FLAC"},
		{"avi", []byte("RIFF\x00\x01\x00\x00AVI LIST"), ErrNotWAV, `RIFF form type is "AVI "`},
		{"wav", riffFile(chunk("fmt ", pcmFmt(1, 1, 16000, 2, 16)), chunk("data", []byte{1, 2})), nil, ""},
	} {
		rd, err := Open(bytes.NewReader(tc.in))
		if tc.want == nil {
			if err != nil || rd.Container() != WAV {
				t.Fatalf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("%s: %v; want %v containing %q", tc.name, err, tc.want, tc.msg)
		}
	}
}

// TestOpenSkipsID3 puts ID3v2 tags (one with a footer) in front of FLAC and
// MP3 and decodes the same samples.
func TestOpenSkipsID3(t *testing.T) {
	tag := []byte("ID3\x04\x00\x00\x00\x00\x01\x00") // 128-byte body
	tag = append(tag, make([]byte, 128)...)
	footer := []byte("ID3\x04\x00\x10\x00\x00\x00\x04abcd3DI\x04\x00\x10\x00\x00\x00\x04")
	for _, name := range []string{"jfk-1s.flac", "jfk-2s-48k.mp3"} {
		b, err := os.ReadFile(testenv.AudioFixture(t, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		tagged := append(append(append([]byte{}, tag...), footer...), b...)
		got, err := Decode(bytes.NewReader(tagged))
		if err != nil {
			t.Fatalf("%s with ID3: %v", name, err)
		}
		if len(got.Samples) != len(want.Samples) || !slicesEqual(got.Samples, want.Samples) {
			t.Fatalf("%s with ID3: %d samples differ from the untagged %d", name, len(got.Samples), len(want.Samples))
		}
	}
}

func slicesEqual(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestCompressedStreamingFrames: reads of any size give the samples of the
// whole-file read, the file read through a one-byte-at-a-time reader too.
func TestCompressedStreamingFrames(t *testing.T) {
	for _, fx := range fixtures {
		b, err := os.ReadFile(testenv.AudioFixture(t, fx.name))
		if err != nil {
			t.Fatal(err)
		}
		whole, err := Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 7, 576, 4096} {
			rd, err := Open(oneByte{bytes.NewReader(b)})
			if err != nil {
				t.Fatal(err)
			}
			var got []float32
			buf := make([]float32, size)
			short := false
			for {
				n, err := rd.Read(buf)
				if short && n > 0 {
					t.Fatalf("%s: a short read came before the end", fx.name)
				}
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				short = n < size
			}
			if !slicesEqual(got, whole.Samples) {
				t.Fatalf("%s: frames of %d: %d samples differ from the whole-file %d", fx.name, size, len(got), len(whole.Samples))
			}
		}
	}
}

// oneByte reads one byte per call, as a slow pipe may.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}
