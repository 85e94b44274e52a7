package audio

import (
	"bytes"
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

// addFixtureSeeds adds the first bytes of the made fixtures whose
// names end in ext (all of them for "").
func addFixtureSeeds(f *testing.F, ext string) {
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
		f.Add(b[:min(len(b), 3000)])
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
	addFixtureSeeds(f, "")
	f.Add([]byte("ID3\x04\x00\x10\x00\x00\x00\x04abcd3DI\x04\x00\x10\x00\x00\x00\x04\xff\xf3\x48\xc4"))
	f.Add(oggPage("OpusHead\x01\x02\x38\x01"))
	f.Add([]byte("\x00\x00\x00\x20ftypM4A "))
	f.Fuzz(func(t *testing.T, in []byte) { checkDecoder(t, Open, in) })
}

// FuzzFLAC drives the FLAC decoder directly, past the sniffing.
func FuzzFLAC(f *testing.F) {
	addFixtureSeeds(f, ".flac")
	pcm := []int{0, 1, -1, 32767, -32768, 5, 6, 7}
	f.Add(encodeFLAC(f, 16000, 16, 2, pcm, 2))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoder(t, openFLAC, in)
	})
}

// FuzzMP3 drives the MP3 decoder directly, past the sniffing.
func FuzzMP3(f *testing.F) {
	addFixtureSeeds(f, ".mp3")
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoder(t, openMP3, in)
	})
}

// FuzzSniff: any bytes get a name and a printable detail.
func FuzzSniff(f *testing.F) {
	addFixtureSeeds(f, "")
	f.Add(oggPage("\x01vorbis"))
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
