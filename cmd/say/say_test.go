package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/sigexit"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/weights"
)

// needFrontEnd returns an en-us G2P, skipping loudly without espeak-ng.
func needFrontEnd(t testing.TB) *g2p.G2P {
	t.Helper()
	front, err := g2p.NewEspeak(g2p.AmericanEnglish)
	if err != nil {
		t.Skipf("SKIP: espeak-ng unavailable (apt-get install libespeak-ng1 espeak-ng-data): %v", err)
	}
	return front
}

// needModels skips loudly unless the Kokoro weights and voices are cached.
func needModels(t *testing.T) {
	t.Helper()
	for _, id := range []string{weights.KokoroV1, weights.KokoroVoices} {
		a, err := weights.Open(id)
		if err != nil {
			t.Skipf("SKIP: %s not in the model cache: run `go run ./cmd/models fetch %s` (%v)", id, id, err)
		}
		a.Close()
	}
}

// needSynthesis skips a test that synthesises speech (why says how much)
// in -short mode, and loudly where espeak-ng or the Kokoro weights and
// voices are missing.
func needSynthesis(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	needFrontEnd(t)
	needModels(t)
}

// TestFlags: good flags parse (--device, else $FORGE_DEVICE, else auto
// choosing the backend); a bad value is reported on stderr, naming the
// flag or the variable, and exits with exitUsage before anything loads.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		env     string // $FORGE_DEVICE
		backend string // the backend chosen, for good flags
		code    int
		msg     string // in stderr, for bad flags
	}{
		{name: "defaults", args: []string{"-o", "x.wav", "hi"}, backend: "cpu"},
		{name: "device", args: []string{"--device", "cpu", "hi"}, backend: "cpu"},
		{name: "device auto", args: []string{"--device=AUTO", "hi"}, backend: "cpu"},
		{name: "env", args: []string{"hi"}, env: "cpu", backend: "cpu"},
		{name: "flag over env", args: []string{"--device", "auto", "hi"}, env: "gpu", backend: "cpu"},
		{name: "help", args: []string{"-h"}, code: exitOK},
		{name: "rate", args: []string{"--rate", "0", "hi"}, code: exitUsage, msg: "say: --rate 0: want a sample rate of 1000 to 384000 Hz"},
		{name: "rate too high", args: []string{"--rate", "384001", "hi"}, code: exitUsage, msg: "say: --rate 384001: want a sample rate"},
		{name: "half precision on the cpu", args: []string{"--device", "cpu", "--precision", "f16", "hi"}, code: exitUsage, msg: "say: --precision f16: half-precision products run on a GPU"},
		{name: "unknown precision", args: []string{"--precision", "f8", "hi"}, code: exitUsage, msg: `say: --precision "f8": want f32, f16 or bf16`},
		{name: "speed", args: []string{"--speed", "-1", "hi"}, code: exitUsage, msg: "--speed -1"},
		{name: "speed NaN", args: []string{"--speed", "NaN", "hi"}, code: exitUsage, msg: "--speed NaN"},
		{name: "max tokens", args: []string{"--max-tokens", "9", "hi"}, code: exitUsage, msg: "--max-tokens 9: want 16 to"},
		{name: "unknown flag", args: []string{"--nope"}, code: exitUsage, msg: "flag provided but not defined: -nope"},
		{name: "not a number", args: []string{"--rate", "fast"}, code: exitUsage, msg: `invalid value "fast" for flag -rate`},
		{name: "unknown device", args: []string{"--device", "gpu", "hi"}, code: exitUsage,
			msg: `say: --device gpu: kernels: unknown backend "gpu": not built into this binary (available: cpu, auto)`},
		{name: "metal off darwin", args: []string{"--device", "metal", "hi"}, code: exitUsage, msg: `--device metal: kernels: metal: backend unavailable: not darwin`},
		{name: "bad env", args: []string{"hi"}, env: "tpu", code: exitUsage, msg: `say: FORGE_DEVICE=tpu: kernels: unknown backend "tpu"`},
		{name: "device without value", args: []string{"--device"}, code: exitUsage, msg: "flag needs an argument: -device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FORGE_DEVICE", c.env)
			var stderr bytes.Buffer
			o, err := parseFlags(c.args, &stderr)
			if c.backend != "" {
				if err != nil || o.backend != c.backend {
					t.Fatalf("parseFlags(%q) with FORGE_DEVICE=%q = %+v, %v; want backend %s", c.args, c.env, o, err, c.backend)
				}
				return
			}
			// run parses first: a bad command line fails before voices or
			// models load.
			stderr.Reset()
			code := exitCode(context.Background(), run(context.Background(), c.args, strings.NewReader(""), &bytes.Buffer{}, &stderr), &stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and a message containing %q", code, stderr.String(), c.code, c.msg)
			}
		})
	}
}

// TestExitCode: failed runs exit 1, bad command lines 2, runs stopped by
// a signal 128+n whatever error the stop left; the flag package's own
// reports are not printed twice.
func TestExitCode(t *testing.T) {
	interrupted := func(sig syscall.Signal) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&sigexit.Interrupt{Signal: sig})
		return ctx
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		code int
		msg  string
	}{
		{"ok", context.Background(), nil, exitOK, ""},
		{"help", context.Background(), flag.ErrHelp, exitOK, ""},
		{"run failed", context.Background(), errors.New("unknown voice"), exitError, "say: unknown voice\n"},
		{"wrapped run failure", context.Background(), fmt.Errorf("nothing to say: %w", g2p.ErrNoSpeech), exitError, "say: nothing to say: " + g2p.ErrNoSpeech.Error() + "\n"},
		{"bad flag", context.Background(), badArgs("--rate %d: bad", 0), exitUsage, "say: --rate 0: bad\n"},
		{"printed by flag", context.Background(), argError{errUsage}, exitUsage, ""},
		{"SIGINT", interrupted(syscall.SIGINT), context.Canceled, 130, "say: interrupted by SIGINT\n"},
		{"SIGTERM", interrupted(syscall.SIGTERM), errors.New("pipeline \"say\": interrupted by SIGTERM"), 143, "say: interrupted by SIGTERM\n"},
		{"finished before the signal", interrupted(syscall.SIGTERM), nil, exitOK, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := exitCode(c.ctx, c.err, &stderr); code != c.code || stderr.String() != c.msg {
				t.Errorf("exitCode(%v) = %d, stderr %q; want %d, %q", c.err, code, stderr.String(), c.code, c.msg)
			}
		})
	}
}

func TestSayEndToEnd(t *testing.T) {
	needSynthesis(t, "synthesis takes seconds")
	dir := t.TempDir()
	out := filepath.Join(dir, "hi.wav")
	card := filepath.Join(dir, "card.json")
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-o", out, "--rate", "16000", "--scorecard", card, "Hello world."}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	clip, err := audio.ReadWAVFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// "Hello world." is 66 frames of 600 samples at 24 kHz (the golden
	// durations): 1.65 s, here at 16 kHz.
	if clip.SampleRate != 16000 || len(clip.Samples) < 20000 || len(clip.Samples) > 30000 {
		t.Fatalf("%d Hz, %d samples", clip.SampleRate, len(clip.Samples))
	}
	var peak float32
	for _, s := range clip.Samples {
		peak = max(peak, s, -s)
	}
	if peak < 0.05 {
		t.Fatalf("peak %v: silence", peak)
	}
	if b, err := os.ReadFile(card); err != nil || !bytes.Contains(b, []byte(`"ttfa_ms"`)) {
		t.Fatalf("scorecard: %v %s", err, b)
	}
}

// TestSayWarmsOnlyForStdin: text on the command line or in a file is
// spoken without the model's warm-up run (say.Config.Cold), text from
// standard input after it; the scorecard says which.
func TestSayWarmsOnlyForStdin(t *testing.T) {
	needSynthesis(t, "three syntheses")
	dir := t.TempDir()
	textFile := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(textFile, []byte("Hi."), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		cold  bool
	}{
		{"command line", []string{"Hi."}, "", true},
		{"file", []string{"-f", textFile}, "", true},
		{"stdin", nil, "Hi.", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			card := filepath.Join(dir, c.name+".json")
			args := append([]string{"-o", filepath.Join(dir, c.name+".wav"), "--scorecard", card}, c.args...)
			var stderr bytes.Buffer
			if err := run(context.Background(), args, strings.NewReader(c.stdin), &bytes.Buffer{}, &stderr); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			b, err := os.ReadFile(card)
			if err != nil {
				t.Fatal(err)
			}
			if cold := bytes.Contains(b, []byte("not warmed")); cold != c.cold {
				t.Errorf("scorecard says cold = %v, want %v:\n%s", cold, c.cold, b)
			}
		})
	}
}

func TestSayErrors(t *testing.T) {
	needFrontEnd(t)
	needModels(t)
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"unknown voice", []string{"--voice", "xx_nobody", "-o", os.DevNull, "hi"}, "", "unknown voice"},
		{"bad mix", []string{"--voice", "af_heart:-1", "-o", os.DevNull, "hi"}, "", "bad voice"},
		{"bad lang", []string{"--lang", "ja", "-o", os.DevNull, "hi"}, "", "unsupported language"},
		{"empty stdin", []string{"-o", os.DevNull}, "", "nothing to say"},
		{"invalid utf-8", []string{"-o", os.DevNull}, "\xff\xfe", "UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(context.Background(), c.args, strings.NewReader(c.stdin), &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestBlankTextBeforeModels: blank text given as arguments fails before
// any model loads (here the model cache is empty, so loading would fail
// with another error) and never touches the output file.
func TestBlankTextBeforeModels(t *testing.T) {
	t.Setenv("FORGE_MODELS", t.TempDir())
	out := filepath.Join(t.TempDir(), "v.wav")
	if err := os.WriteFile(out, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"-o", out, " ", "\t"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "nothing to say") {
		t.Fatalf("error %v, want nothing to say (before loading models)", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep" {
		t.Errorf("the output file now holds %q", b)
	}
}
