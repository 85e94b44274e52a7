package testenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Compressed test clips are not committed: each is made on first use by
// Debian's reference encoder (flac, lame, oggenc, opusenc) from a source
// the tests rebuild exactly (a cut of ../shared/data/jfk.wav, or
// TestSignal), and kept under the system's temporary directory in a
// folder named by a hash of what made it, so that the test binaries of
// one run share them.
type audioClip struct {
	source func() (pcm []int16, rate, channels int, err error)
	encode []string // the encoder and its flags for 16-bit little-endian raw input on stdin
}

// audioClips are the clips tests may ask for by name.
var audioClips = map[string]audioClip{
	"jfk-1s.flac":           {jfkCut(1), flacArgs},
	"tones-stereo-44k.flac": {tones(44100, 0.5), flacArgs},
	"jfk-2s-48k.mp3":        {jfkCut(2), lameArgs("48")},
	// At 32 kbit/s LAME leaves out the Info frame (no frame count, no
	// encoder delay recorded): a file readers must take on trust.
	"jfk-2s-32k-notag.mp3": {jfkCut(2), lameArgs("32")},
	"tones-stereo-44k.mp3": {tones(44100, 0.5), lameArgs("128")},
	// All of jfk.wav (11 s), for the transcript and the decode speed.
	"jfk-11s.ogg":          {jfkCut(11), oggencArgs},
	"tones-stereo-44k.ogg": {tones(44100, 0.5), oggencArgs},
	"tones-stereo-48k.ogg": {tones(48000, 0.5), oggencArgs},
	"jfk-1s.opus":          {jfkCut(1), opusencArgs},
}

// encoderPackages names the Debian package of each encoder, for the skip
// message.
var encoderPackages = map[string]string{"flac": "flac", "lame": "lame", "oggenc": "vorbis-tools", "opusenc": "opus-tools"}

var flacArgs = []string{"flac", "-s", "-8", "-f", "--force-raw-format", "--endian=little", "--sign=signed", "--bps=16"}

func lameArgs(kbps string) []string {
	return []string{"lame", "--quiet", "-r", "--bitwidth", "16", "--little-endian", "--signed", "-b", kbps}
}

// oggencArgs: quality 4 (oggenc's default, about 128 kbit/s for 44.1 kHz
// stereo) and a fixed serial number, so that a clip is the same file on
// every machine.
var oggencArgs = []string{"oggenc", "--quiet", "--raw", "--raw-bits=16", "--raw-endianness=0", "--quality=4", "--serial=1"}

var opusencArgs = []string{"opusenc", "--quiet", "--raw", "--raw-bits", "16", "--raw-endianness", "0", "--serial", "1"}

// AudioFixture returns the path of the compressed test clip called name
// (see audioClips), making it first if this machine has not yet. It skips
// the test, saying what to install, when the encoder is missing.
func AudioFixture(t testing.TB, name string) string {
	t.Helper()
	p, err := MakeAudioFixture(name)
	if errors.Is(err, exec.ErrNotFound) {
		tool := audioClips[name].encode[0]
		t.Skipf("SKIPPED: %s needs %s, from Debian's package %s (apt-get install %s): %v", name, tool, encoderPackages[tool], encoderPackages[tool], err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// MakeAudioFixture is AudioFixture for callers that cannot skip (a fuzz
// target's seeds): the error wraps exec.ErrNotFound when the encoder is
// missing.
func MakeAudioFixture(name string) (string, error) {
	c, ok := audioClips[name]
	if !ok {
		return "", fmt.Errorf("testenv: no audio fixture %q", name)
	}
	if _, err := exec.LookPath(c.encode[0]); err != nil {
		return "", err
	}
	pcm, rate, ch, err := c.source()
	if err != nil {
		return "", fmt.Errorf("testenv: %s: %w", name, err)
	}
	args := append([]string(nil), c.encode...)
	switch c.encode[0] {
	case "flac":
		args = append(args, fmt.Sprintf("--channels=%d", ch), fmt.Sprintf("--sample-rate=%d", rate))
	case "lame":
		mode := "m"
		if ch == 2 {
			mode = "j"
		}
		args = append(args, "-m", mode, "-s", strings.TrimSuffix(fmt.Sprintf("%.3f", float64(rate)/1000), ".000"))
	case "oggenc":
		args = append(args, fmt.Sprintf("--raw-chan=%d", ch), fmt.Sprintf("--raw-rate=%d", rate))
	case "opusenc":
		args = append(args, "--raw-chan", fmt.Sprint(ch), "--raw-rate", fmt.Sprint(rate))
	}
	raw := new(bytes.Buffer)
	if err := binary.Write(raw, binary.LittleEndian, pcm); err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(strings.Join(args, "\x00")))
	h.Write(raw.Bytes())
	// The file keeps its name (commands name their outputs after their
	// inputs) in a folder named by the hash.
	dir := filepath.Join(os.TempDir(), "forge-audio-fixtures", hex.EncodeToString(h.Sum(nil))[:16])
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*-"+name)
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	switch c.encode[0] {
	case "flac", "oggenc":
		args = append(args, "-o", tmp.Name(), "-")
	default:
		args = append(args, "-", tmp.Name())
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = raw
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testenv: %s: %v: %w: %s", name, args, err, out)
	}
	// Renamed whole into place: test binaries running at once may race to
	// make the same clip, and none may read a half-written one.
	return path, os.Rename(tmp.Name(), path)
}

// jfkCut returns the first seconds of ../shared/data/jfk.wav (16 kHz mono
// 16-bit), read from the WAV's data chunk.
func jfkCut(seconds float64) func() ([]int16, int, int, error) {
	return func() ([]int16, int, int, error) {
		root, err := repoRoot()
		if err != nil {
			return nil, 0, 0, err
		}
		b, err := os.ReadFile(filepath.Join(root, "..", "shared", "data", "jfk.wav"))
		if err != nil {
			return nil, 0, 0, err
		}
		for off := 12; off+8 <= len(b); {
			id, size := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:]))
			off += 8
			if id == "data" {
				n := min(int(seconds*16000), size/2, (len(b)-off)/2)
				pcm := make([]int16, n)
				_, err := binary.Decode(b[off:off+2*n], binary.LittleEndian, pcm)
				return pcm, 16000, 1, err
			}
			off += size + size&1
		}
		return nil, 0, 0, errors.New("jfk.wav has no data chunk")
	}
}

func tones(rate int, seconds float64) func() ([]int16, int, int, error) {
	return func() ([]int16, int, int, error) {
		pcm := TestSignal(rate, seconds)
		out := make([]int16, len(pcm))
		for i, v := range pcm {
			out[i] = int16(v)
		}
		return out, rate, 2, nil
	}
}

// TestSignal is a stereo signal tests rebuild exactly, interleaved 16-bit
// values: a gliding tone on the left, two steady tones on the right, both
// under an envelope.
func TestSignal(rate int, seconds float64) []int {
	n := int(seconds * float64(rate))
	out := make([]int, 0, 2*n)
	for i := range n {
		x := float64(i) / float64(rate)
		env := math.Sin(math.Pi * float64(i) / float64(n))
		l := 0.4 * env * math.Sin(2*math.Pi*(200*x+600*x*x))
		r := 0.2 * env * (math.Sin(2*math.Pi*440*x) + math.Sin(2*math.Pi*1250*x))
		out = append(out, int(math.Round(l*32767)), int(math.Round(r*32767)))
	}
	return out
}

// repoRoot is RepoRoot without a test to fail.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}
