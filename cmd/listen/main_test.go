package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/weights"
)

// requireModel skips loudly when the VAD weights are not in the cache (the
// CLI would try to fetch them).
func requireModel(t *testing.T) {
	t.Helper()
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Ready(weights.SileroVADv6) {
		t.Skipf("SKIPPED: silero-vad-v6 is not in the model cache %s — run `go run ./cmd/models fetch silero-vad-v6` (or `make models`)", c.Root)
	}
}

// goldenWAV returns the path of ../shared/golden/audio/<name>.wav.
func goldenWAV(t *testing.T, name string) string {
	return testenv.Shared(t, "golden", "audio", name+".wav")
}

// wavBytes builds a 16-bit PCM WAV with interleaved samples.
func wavBytes(rate, channels int, samples []int16) []byte {
	var b bytes.Buffer
	data := 2 * len(samples)
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+data))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(channels), uint32(rate),
		uint32(rate * channels * 2), uint16(channels * 2), uint16(16)} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(data))
	binary.Write(&b, binary.LittleEndian, samples)
	return b.Bytes()
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runListen(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// jfkText is what get_speech_timestamps gives for jfk.wav with the
// defaults (samples at 16 kHz; see models/vad's reference cases).
const jfkText = "0.322 2.27\n3.266 4.446\n5.378 7.678\n8.162 10.622\n"

func TestVADOnly(t *testing.T) {
	requireModel(t)
	jfk := goldenWAV(t, "jfk")
	code, out, errs := runListen(t, "--vad-only", jfk)
	if code != exitOK || out != jfkText {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, jfkText)
	}

	code, out, errs = runListen(t, "--vad-only", "--json", jfk)
	if code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, errs)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var seg struct{ Start, End float64 }
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&seg); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, strings.TrimSpace(strings.Join([]string{fmtF(seg.Start), fmtF(seg.End)}, " ")))
	}
	if strings.Join(got, "\n")+"\n" != jfkText {
		t.Errorf("--json segments %v, want %q", got, jfkText)
	}
}

func fmtF(x float64) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// TestVADOnlyStereo: a two-channel file is mixed down; identical channels
// give the mono result.
func TestVADOnlyStereo(t *testing.T) {
	requireModel(t)
	c, err := audio.ReadWAVFile(goldenWAV(t, "jfk"))
	if err != nil {
		t.Fatal(err)
	}
	inter := make([]int16, 2*len(c.Samples))
	for i, s := range c.Samples {
		v := int16(s * 32768)
		inter[2*i], inter[2*i+1] = v, v
	}
	p := writeTemp(t, "stereo.wav", wavBytes(16000, 2, inter))
	code, out, errs := runListen(t, "--vad-only", p)
	if code != exitOK || out != jfkText {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, jfkText)
	}
}

// TestVADOnlyResamples: a 48 kHz file is resampled to 16 kHz on the way
// in. Two resamplings and 16-bit rounding move probabilities near the
// thresholds, so the segments are compared by the time they cover: the
// speech found must overlap the 16 kHz original's by ≥ 90% (intersection
// over union), and the times must be in seconds of the file.
func TestVADOnlyResamples(t *testing.T) {
	requireModel(t)
	c, err := audio.ReadWAVFile(goldenWAV(t, "jfk"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := resample.New(16000, 48000)
	if err != nil {
		t.Fatal(err)
	}
	up := rs.Flush(rs.Process(nil, c.Samples))
	p := filepath.Join(t.TempDir(), "jfk48k.wav")
	if err := audio.WriteWAVFile(p, audio.Clip{Samples: up, SampleRate: 48000}, audio.Int16); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runListen(t, "--vad-only", p)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if iou := overlap(t, out, jfkText); iou < 0.9 {
		t.Errorf("segments %q cover the original's %q with IoU %.3f, want ≥ 0.9", out, jfkText, iou)
	}
}

// overlap returns the intersection over union of the time covered by two
// lists of "start end" lines, on a 1 ms grid.
func overlap(t *testing.T, a, b string) float64 {
	t.Helper()
	cover := func(s string) map[int]bool {
		m := map[int]bool{}
		f := strings.Fields(s)
		for i := 0; i+1 < len(f); i += 2 {
			lo, err1 := strconv.ParseFloat(f[i], 64)
			hi, err2 := strconv.ParseFloat(f[i+1], 64)
			if err1 != nil || err2 != nil || hi < lo {
				t.Fatalf("bad segment line in %q", s)
			}
			for ms := int(math.Round(lo * 1000)); ms < int(math.Round(hi*1000)); ms++ {
				m[ms] = true
			}
		}
		return m
	}
	ca, cb := cover(a), cover(b)
	inter, union := 0, len(cb)
	for ms := range ca {
		if cb[ms] {
			inter++
		} else {
			union++
		}
	}
	return float64(inter) / float64(max(union, 1))
}

// TestVADOnlyBadInput: every bad input exits non-zero with a message that
// names the problem, and prints no segment.
func TestVADOnlyBadInput(t *testing.T) {
	requireModel(t)
	for _, c := range []struct {
		name string
		args func(t *testing.T) []string
		code int
		msg  string
	}{
		{"no samples", func(t *testing.T) []string {
			return []string{"--vad-only", writeTemp(t, "empty.wav", wavBytes(16000, 1, nil))}
		}, exitError, "empty audio"},
		{"not a WAV", func(t *testing.T) []string {
			return []string{"--vad-only", writeTemp(t, "x.wav", []byte("hello, this is not audio at all"))}
		}, exitError, "unrecognised audio format: starts with bytes"},
		{"truncated", func(t *testing.T) []string {
			b := wavBytes(16000, 1, make([]int16, 16000))
			return []string{"--vad-only", writeTemp(t, "cut.wav", b[:30])}
		}, exitError, "truncated"},
		{"missing file", func(t *testing.T) []string {
			return []string{"--vad-only", filepath.Join(t.TempDir(), "nope.wav")}
		}, exitError, "no such file"},
		{"no file", func(*testing.T) []string { return []string{"--vad-only"} }, exitUsage, "want exactly one input file"},
		{"bad threshold", func(t *testing.T) []string {
			return []string{"--vad-only", "--vad-threshold", "2", "x.wav"}
		}, exitUsage, "threshold 2 is not in (0, 1]"},
		{"unknown flag", func(*testing.T) []string { return []string{"--vad-onyl", "x.wav"} }, exitUsage, "flag provided but not defined"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runListen(t, c.args(t)...)
			if code != c.code || out != "" || !strings.Contains(errs, c.msg) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and a message containing %q", code, out, errs, c.code, c.msg)
			}
		})
	}
}

// TestVADOnlyCancelled: a cancelled run fails with the context's error.
func TestVADOnlyCancelled(t *testing.T) {
	requireModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"--vad-only", goldenWAV(t, "silero_test")}, strings.NewReader(""), &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), context.Canceled.Error()) {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), exitError, context.Canceled)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("context not cancelled")
	}
}

// TestDeviceFlag: --device, else $FORGE_DEVICE, else auto picks the
// backend in every mode; a bad value is a usage error (exit 2) naming the
// flag or the variable and what this binary offers, before any model or
// input is opened.
func TestDeviceFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  string
		want string // the backend chosen; "" for an error
		msg  string
	}{
		{name: "default", args: []string{"x.wav"}, want: "cpu"},
		{name: "flag", args: []string{"--device", "cpu", "x.wav"}, want: "cpu"},
		{name: "auto", args: []string{"--device=auto", "--vad-only", "x.wav"}, want: "cpu"},
		{name: "env", args: []string{"x.wav"}, env: "CPU", want: "cpu"},
		{name: "flag over env", args: []string{"--device", "cpu", "x.wav"}, env: "nope", want: "cpu"},
		{name: "unknown", args: []string{"--device", "gpu", "missing.wav"}, msg: `--device gpu: kernels: unknown backend "gpu": not built into this binary (available: cpu, auto)`},
		{name: "unknown vad-only", args: []string{"--vad-only", "--device", "tpu", "missing.wav"}, msg: `--device tpu: kernels: unknown backend "tpu"`},
		{name: "metal off darwin", args: []string{"--device", "metal", "missing.wav"}, msg: `--device metal: kernels: metal: backend unavailable: not darwin`},
		{name: "bad env", args: []string{"missing.wav"}, env: "gpu", msg: `FORGE_DEVICE=gpu: kernels: unknown backend "gpu"`},
		{name: "bad env vad-only", args: []string{"--vad-only", "missing.wav"}, env: "cuda", msg: `FORGE_DEVICE=cuda: kernels: cuda: backend unavailable: libcuda.so.1 not found`},
		{name: "flag without value", args: []string{"--device"}, msg: "flag needs an argument: -device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FORGE_DEVICE", c.env)
			if c.want != "" {
				cfg, err := parseArgs(c.args, &bytes.Buffer{})
				if err != nil || cfg.backend != c.want {
					t.Fatalf("parseArgs(%q) with FORGE_DEVICE=%q: backend %v, %v; want %q", c.args, c.env, cfg, err, c.want)
				}
				return
			}
			code, out, errs := runListen(t, c.args...)
			if code != exitUsage || out != "" || !strings.Contains(errs, c.msg) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and a message containing %q", code, out, errs, exitUsage, c.msg)
			}
		})
	}
}

// TestPaddedWindowFlag: --padded-window makes Whisper encode 30-s
// windows; without it, the real length.
func TestPaddedWindowFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want whisper.EncodeLength
	}{
		{[]string{"--device", "cpu", "x.wav"}, whisper.RealLength},
		{[]string{"--device", "cpu", "--padded-window", "x.wav"}, whisper.FullWindow},
	} {
		cfg, err := parseArgs(c.args, &bytes.Buffer{})
		if err != nil || cfg.span != c.want {
			t.Errorf("parseArgs(%q) = %+v, %v; want encode length %v", c.args, cfg, err, c.want)
		}
	}
}

// TestMicFlag: the microphone is chosen with --mic (--device names the
// compute backend).
func TestMicFlag(t *testing.T) {
	cfg, err := parseArgs([]string{"--mic", "USB Audio", "--device", "cpu"}, &bytes.Buffer{})
	if err != nil || cfg.mic != "USB Audio" || cfg.backend != "cpu" {
		t.Fatalf("parseArgs = %+v, %v; want mic %q on cpu", cfg, err, "USB Audio")
	}
}

// TestPrecisionFlag: on the cpu backend --precision bf16 is Whisper's own
// bfloat16 arithmetic with no device precision (the cpu backend computes
// its products in f32 and refuses half precision), as f32 and int8 are;
// f16 is refused there.
func TestPrecisionFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want whisper.Precision
		msg  string // an error's text; "" for none
	}{
		{[]string{"--device", "cpu", "x.wav"}, whisper.F32, ""},
		{[]string{"--device", "cpu", "--precision", "bf16", "x.wav"}, whisper.BF16, ""},
		{[]string{"--device", "cpu", "--precision", "BFloat16", "x.wav"}, whisper.BF16, ""},
		{[]string{"--device", "cpu", "--precision", "int8", "x.wav"}, whisper.Int8, ""},
		{[]string{"--device", "cpu", "--precision", "f16", "x.wav"}, 0, "half-precision products run on a GPU"},
	} {
		cfg, err := parseArgs(c.args, &bytes.Buffer{})
		if c.msg != "" {
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("parseArgs(%q): %v; want an error saying %q", c.args, err, c.msg)
			}
			continue
		}
		if err != nil || cfg.precision != c.want || cfg.products != 0 {
			t.Errorf("parseArgs(%q) = %+v, %v; want precision %v and no device precision", c.args, cfg, err, c.want)
		}
	}
}
