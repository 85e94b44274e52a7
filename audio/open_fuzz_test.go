package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
)

// openErrors are the errors an Open failure must wrap.
var openErrors = append([]error{ErrUnknownFormat, ErrCorrupt}, namedErrors...)

func isOpenNamed(err error) bool {
	for _, e := range openErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// addFixtureSeeds adds the first limit bytes of the made fixtures whose
// names end in ext (all of them for "").
func addFixtureSeeds(f *testing.F, ext string, limit int) {
	for _, fx := range fixtures {
		if !strings.HasSuffix(fx.name, ext) {
			continue
		}
		// The seeds need Debian's encoders; without them the fuzzer starts
		// from its other seeds (TestFixtures says what is missing).
		path, err := testenv.MakeAudioFixture(fx.name)
		if errors.Is(err, exec.ErrNotFound) {
			continue
		}
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), limit)])
	}
}

// checkDecoder is the property every decoder entry point shares: no panic;
// a failure names its cause; frame-by-frame streaming yields the samples of
// the whole-file read, and the same error.
func checkDecoder(t *testing.T, open func(io.Reader) (*Reader, error), in []byte) {
	whole, wholeErr := func() (Clip, error) {
		rd, err := open(bytes.NewReader(in))
		if err != nil {
			return Clip{}, err
		}
		return rd.ReadAll()
	}()
	if wholeErr != nil && !isOpenNamed(wholeErr) {
		t.Fatalf("error names no cause: %v", wholeErr)
	}
	rd, err := open(oneByte{bytes.NewReader(in)})
	if err != nil {
		if wholeErr == nil || err.Error() != wholeErr.Error() {
			t.Fatalf("streaming open: %v; whole-file: %v", err, wholeErr)
		}
		return
	}
	var streamed []float32
	frame := make([]float32, 333)
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
			if wholeErr == nil || err.Error() != wholeErr.Error() {
				t.Fatalf("streaming: %v; whole-file: %v", err, wholeErr)
			}
			break
		}
	}
	if !slicesEqual(streamed, whole.Samples) {
		t.Fatalf("streaming gave %d samples, whole-file %d, or they differ", len(streamed), len(whole.Samples))
	}
	if rd.Frames() >= 0 && wholeErr == nil && int64(len(whole.Samples)) > rd.Frames() && rd.Container() == MP3 {
		t.Fatalf("%d samples, more than the LAME header's %d", len(whole.Samples), rd.Frames())
	}
}

// FuzzOpen feeds arbitrary bytes to the sniffing entry point. Seeds: the
// fixtures' first bytes and the formats TestOpenNamesFormats names.
func FuzzOpen(f *testing.F) {
	addFixtureSeeds(f, "", 3000)
	f.Add([]byte("ID3\x04\x00\x10\x00\x00\x00\x04abcd3DI\x04\x00\x10\x00\x00\x00\x04\xff\xf3\x48\xc4"))
	f.Add(oggFirstPage("OpusHead\x01\x02\x38\x01"))
	f.Add(append(oggFirstPage("\x01vorbis\x00\x00\x00\x00\x02\x44\xac"), "OggS\x00\x00garbage"...))
	f.Add([]byte("\x00\x00\x00\x20ftypM4A "))
	f.Fuzz(func(t *testing.T, in []byte) { checkDecoder(t, Open, in) })
}

// FuzzFLAC drives the FLAC decoder directly, past the sniffing.
func FuzzFLAC(f *testing.F) {
	addFixtureSeeds(f, ".flac", 3000)
	pcm := []int{0, 1, -1, 32767, -32768, 5, 6, 7}
	f.Add(encodeFLAC(f, 16000, 16, 2, pcm, 2))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoder(t, openFLAC, in)
	})
}

// FuzzMP3 drives the MP3 decoder directly, past the sniffing.
func FuzzMP3(f *testing.F) {
	addFixtureSeeds(f, ".mp3", 3000)
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoder(t, openMP3, in)
	})
}

// FuzzVorbis drives the Ogg/Vorbis reader directly, past the sniffing.
// Mutated pages mostly fail their checksum in oggvorbis; FuzzVorbisPackets
// reaches the codec.
func FuzzVorbis(f *testing.F) {
	addFixtureSeeds(f, ".ogg", 1<<14)
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoder(t, openVorbis, in)
	})
}

// FuzzVorbisPackets lays the fuzzer's identification header, setup header
// and audio packets (each after its 16-bit little-endian length) out on
// pages with valid checksums, so that mutations reach the header checks
// and github.com/jfreymuth/vorbis itself.
func FuzzVorbisPackets(f *testing.F) {
	var comment []byte
	for _, name := range []string{"tones-stereo-44k.ogg", "jfk-11s.ogg"} {
		path, err := testenv.MakeAudioFixture(name)
		if errors.Is(err, exec.ErrNotFound) {
			continue
		}
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		pk := splitOgg(f, b).packets()
		comment = pk[1]
		var audio []byte
		for _, p := range pk[3:min(len(pk), 40)] {
			audio = binary.LittleEndian.AppendUint16(audio, uint16(len(p)))
			audio = append(audio, p...)
		}
		f.Add(pk[0], pk[2], audio)
	}
	if comment == nil {
		comment = []byte("\x03vorbis\x00\x00\x00\x00\x00\x00\x00\x00\x01")
	}
	f.Fuzz(func(t *testing.T, ident, setup, audio []byte) {
		packets := [][]byte{comment, setup}
		for len(audio) >= 2 {
			n := min(int(binary.LittleEndian.Uint16(audio)), len(audio)-2)
			packets = append(packets, audio[2:2+n])
			audio = audio[2+n:]
		}
		// Granule positions past any length: nothing is trimmed.
		in := append(oggPackets(1, 0, 0, false, ident), oggPackets(1, 1, 1<<40, true, packets...)...)
		checkDecoder(t, openVorbis, in)
	})
}

// FuzzSniff: any bytes get a name and a printable detail.
func FuzzSniff(f *testing.F) {
	addFixtureSeeds(f, "", 3000)
	f.Add(oggFirstPage("\x01vorbis"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, detail := Sniff(in)
		if c.String() == "" || strings.HasPrefix(c.String(), "Container(") {
			t.Fatalf("unnamed container %d", c)
		}
		for _, r := range detail {
			if r < 0x20 || r > 0x7e {
				t.Fatalf("detail %q is not printable ASCII", detail)
			}
		}
	})
}
