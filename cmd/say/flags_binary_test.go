package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
)

// runSay runs the built say with args and stdin and returns its exit
// status, stdout and stderr.
func runSay(t *testing.T, bin, dir, stdin string, args ...string) (int, []byte, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.Bytes(), stderr.String()
}

// TestBinaryConventions runs the built say: --help exits 0, bad command
// lines 2, failed runs 1; --ipa prints phonemes; --list-voices shows
// language and gender and says what it leaves out; -f reads a file;
// --format raw writes bare PCM, the same samples as the WAV.
func TestBinaryConventions(t *testing.T) {
	bin := testenv.Build(t, "cmd/say")
	dir := t.TempDir()
	textFile := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(textFile, []byte("Hello there,\nworld.\nBye.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // in stdout
		stderr string // in stderr
		models bool   // needs espeak-ng (and for some, the voices)
	}{
		{name: "help", args: []string{"--help"}, code: exitOK, stderr: "usage: say"},
		{name: "unknown flag", args: []string{"--nope"}, code: exitUsage, stderr: "flag provided but not defined"},
		{name: "bad format", args: []string{"--format", "mp3", "hi"}, code: exitUsage, stderr: `--format "mp3": want wav or raw`},
		{name: "text twice", args: []string{"-f", textFile, "hi"}, code: exitUsage, stderr: "text given both"},
		{name: "missing input file", args: []string{"--input-file", "nope.txt", "-o", "x.wav"}, code: exitError, stderr: "nope.txt: no such file"},
		{name: "unknown language", args: []string{"--ipa", "--lang", "xx", "hi"}, code: exitError, stderr: "unsupported language", models: true},
		{name: "japanese", args: []string{"--ipa", "--voice", "jf_alpha", "hi"}, code: exitError, stderr: "Japanese needs its own G2P", models: true},
		{name: "ipa", args: []string{"--ipa", "Hello world."}, code: exitOK, stdout: "həlˈoʊ wˈɜːld.\n", models: true},
		{name: "ipa in French", args: []string{"--ipa", "--lang", "fr", "Bonjour."}, code: exitOK, stdout: "bɔ̃ʒˈuʁ.\n", models: true},
		{name: "ipa from a file", args: []string{"--ipa", "-f", textFile}, code: exitOK, stdout: "həlˈoʊ ðˈɛɹ,\nwˈɜːld.\nbˈaɪ.\n", models: true}, // a line break ends a sentence
		{name: "ipa from stdin", args: []string{"--ipa", "-f", "-"}, stdin: "Bye.", code: exitOK, stdout: "bˈaɪ.\n", models: true},
		{name: "list voices", args: []string{"--list-voices"}, code: exitOK, stdout: "ef_dora      es     Spanish               female\n", models: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.models {
				needFrontEnd(t)
				if c.name == "list voices" {
					needModels(t)
				}
			}
			code, stdout, stderr := runSay(t, bin, dir, c.stdin, c.args...)
			if code != c.code || !strings.Contains(string(stdout), c.stdout) || !strings.Contains(stderr, c.stderr) {
				t.Errorf("say %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q", c.args, code, stdout, stderr, c.code, c.stdout, c.stderr)
			}
		})
	}

	t.Run("list voices footer", func(t *testing.T) {
		needModels(t)
		_, stdout, _ := runSay(t, bin, dir, "", "--list-voices")
		out := string(stdout)
		if strings.Contains(out, "jf_alpha") || strings.Contains(out, "zf_xiaobei") || !strings.Contains(out, "Japanese (j…) and Mandarin (z…) voices are not listed") {
			t.Errorf("--list-voices shows Japanese or Mandarin voices, or no footer saying why:\n%s", out)
		}
	})

	t.Run("raw and wav", func(t *testing.T) {
		needSynthesis(t, "synthesises twice")
		code, raw, stderr := runSay(t, bin, dir, "", "--format", "raw", "--first", "0", "Hello.")
		if code != exitOK {
			t.Fatalf("--format raw: exit %d, %s", code, stderr)
		}
		code, wav, stderr := runSay(t, bin, dir, "", "-o", "-", "--first", "0", "Hello.")
		if code != exitOK {
			t.Fatalf("-o -: exit %d, %s", code, stderr)
		}
		// Streamed to a pipe: sox's unspecified sizes, which soxi reads as unknown.
		if len(wav) < 44 || binary.LittleEndian.Uint32(wav[40:]) != 0x7FFFF000 {
			t.Fatalf("the streamed WAV's header % x: want a data size of 0x7ffff000", wav[:min(len(wav), 44)])
		}
		if !bytes.Equal(raw, wav[44:]) || len(raw) < 2*4800 {
			t.Errorf("raw output (%d bytes) differs from the WAV's samples (%d bytes)", len(raw), len(wav)-44)
		}
		clip, err := audio.ReadRaw(bytes.NewReader(raw), audio.S16Mono(24000))
		if err != nil || len(clip.Samples) != len(raw)/2 {
			t.Errorf("raw reads as %d samples, %v", len(clip.Samples), err)
		}
		// A seekable file gets exact sizes.
		code, _, stderr = runSay(t, bin, dir, "", "-o", "hello.wav", "--first", "0", "Hello.")
		if code != exitOK {
			t.Fatalf("-o hello.wav: exit %d, %s", code, stderr)
		}
		f, err := os.ReadFile(filepath.Join(dir, "hello.wav"))
		if err != nil || len(f) != len(wav) || binary.LittleEndian.Uint32(f[40:]) != uint32(len(raw)) {
			t.Errorf("hello.wav: %d bytes, %v; want %d with a data size of %d", len(f), err, len(wav), len(raw))
		}
	})
}
