package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/models/whisper/wer"
)

// exitGrace bounds the wait for a process that was sent a signal: it is a
// guard against a test hanging on a process that never stops (the failure
// this file tests for), not a measure of speed.
const exitGrace = 2 * time.Minute

// runBinary runs bin with args and stdin and returns its exit status (-1
// if a signal killed it), stdout and stderr.
func runBinary(t *testing.T, bin string, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %s: %v", bin, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// dataSize returns the offset of the data chunk's size field in a WAV.
func dataSize(t *testing.T, wav []byte) int {
	t.Helper()
	i := bytes.Index(wav, []byte("data"))
	if i < 0 {
		t.Fatal("no data chunk")
	}
	return i + 4
}

// TestBinaryTruncatedInput: a WAV cut short (inside the data, inside a
// frame, or whose header declares more data than the file holds) is still
// transcribed and segmented as far as it goes; listen warns and exits 3.
func TestBinaryTruncatedInput(t *testing.T) {
	requireWhisper(t)
	jfk, err := os.ReadFile(dataFile(t, "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	bin := testenv.Build(t, "cmd/listen")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	overstated := bytes.Clone(jfk)
	at := dataSize(t, overstated)
	binary.LittleEndian.PutUint32(overstated[at:], 2*binary.LittleEndian.Uint32(overstated[at:]))

	cut := write("cut.wav", jfk[:200000])        // 6.25 s of 11: "... ask not what your country"
	midFrame := write("odd.wav", jfk[:200001])   // and half a sample
	whole := write("overstated.wav", overstated) // every sample there, the header claims twice as many
	const firstWords = "And so my fellow Americans"
	for _, c := range []struct {
		name string
		args []string
		// check returns what is wrong with stdout, or "".
		check func(out string) string
	}{
		{"transcribe cut", []string{"--language", "en", cut}, func(out string) string {
			if !strings.Contains(out, firstWords) || strings.Contains(out, "for your country") {
				return "want the words before the cut, and none after"
			}
			return ""
		}},
		{"transcribe mid-frame", []string{"--language", "en", midFrame}, func(out string) string {
			if !strings.Contains(out, firstWords) {
				return "want the words before the cut"
			}
			return ""
		}},
		{"transcribe overstated", []string{"--language", "en", whole}, func(out string) string {
			if r := wer.Compare(jfkRef, out); r.Errors() != 0 {
				return "want the whole sentence"
			}
			return ""
		}},
		{"transcribe stdin", []string{"--language", "en", "-"}, func(out string) string {
			if !strings.Contains(out, firstWords) {
				return "want the words before the cut"
			}
			return ""
		}},
		{"vad-only cut", []string{"--vad-only", cut}, func(out string) string {
			// jfkText's segments, the third ending at the cut (6.2475625 s:
			// the file's 99,961 samples).
			if out != "0.322 2.27\n3.266 4.446\n5.378 6.2475625\n" {
				return "want jfk's segments up to the cut"
			}
			return ""
		}},
		{"vad-only overstated", []string{"--vad-only", whole}, func(out string) string {
			if out != jfkText {
				return "want all of jfk's segments"
			}
			return ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdin []byte
			if c.args[len(c.args)-1] == "-" {
				stdin = jfk[:200000]
			}
			code, out, errs := runBinary(t, bin, stdin, c.args...)
			if code != exitTruncated || !strings.Contains(errs, "warning") || !strings.Contains(errs, "truncated") {
				t.Errorf("exit %d, stderr %q; want %d and a warning that the input was truncated", code, errs, exitTruncated)
			}
			if msg := c.check(out); msg != "" {
				t.Errorf("stdout %q: %s", out, msg)
			}
		})
	}
}

// TestBinaryAbsurdRate: a 32 KB WAV whose header says 1 Hz (hours of audio
// once resampled to 16 kHz) is refused at once in every mode, by name.
func TestBinaryAbsurdRate(t *testing.T) {
	requireWhisper(t)
	bin := testenv.Build(t, "cmd/listen")
	p := writeTemp(t, "1hz.wav", wavBytes(1, 1, make([]int16, 16<<10)))
	for _, args := range [][]string{{"--vad-only", p}, {p}, {"--no-vad", p}} {
		code, out, errs := runBinary(t, bin, nil, args...)
		if code != exitError || out != "" || !strings.Contains(errs, "sample rate out of range") {
			t.Errorf("listen %q: exit %d, stdout %q, stderr %q; want %d and a sample rate error", args, code, out, errs, exitError)
		}
	}
	if code, _, errs := runBinary(t, bin, nil, "--raw-rate", "999", "-"); code != exitUsage || !strings.Contains(errs, "sample rate out of range") {
		t.Errorf("--raw-rate 999: exit %d, stderr %q; want %d", code, errs, exitUsage)
	}
}

// TestBinarySignals: SIGINT and SIGTERM stop listen with 130 and 143 while
// it works and while it waits for more input on a pipe that stays open
// (reads of stdin must give way, or it never exits).
func TestBinarySignals(t *testing.T) {
	requireWhisper(t)
	bin := testenv.Build(t, "cmd/listen")
	speech, err := os.ReadFile(dataFile(t, "silero-test.wav")) // 60 s: at least one 30-s window prints before the end
	if err != nil {
		t.Fatal(err)
	}
	jfk, err := os.ReadFile(dataFile(t, "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	// As a pipe from a recorder or ffmpeg: the data size is "unknown", so
	// listen reads until the input ends, which it never does here.
	for _, b := range [][]byte{speech, jfk} {
		binary.LittleEndian.PutUint32(b[dataSize(t, b):], 0xFFFFFFFF)
	}
	for _, c := range []struct {
		name  string
		args  []string
		input []byte
		sig   syscall.Signal
		code  int
	}{
		{"transcribe SIGINT", []string{"--language", "en", "-"}, speech, syscall.SIGINT, 130},
		{"transcribe SIGTERM", []string{"--language", "en", "-"}, speech, syscall.SIGTERM, 143},
		{"vad-only SIGTERM", []string{"--vad-only", "-"}, jfk, syscall.SIGTERM, 143},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			go func() {
				stdin.Write(c.input) // all of it, and the pipe stays open
			}()
			// The first line of output means listen is running its
			// pipeline; the end of the input never comes, so the run
			// cannot finish before the signal.
			first, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatalf("no output before the signal: %v; stderr %q", err, errb.String())
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, stdout)
			code := waitExit(t, cmd)
			if code != c.code || !strings.Contains(errb.String(), "interrupted by "+signalName(c.sig)) {
				t.Errorf("after %q and %v: exit %d, stderr %q; want %d", first, c.sig, code, errb.String(), c.code)
			}
		})
	}
}

// waitExit waits for cmd (for at most exitGrace, then kills it and fails)
// and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(exitGrace):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not exit within %v of the signal", cmd.Path, exitGrace)
	}
	return cmd.ProcessState.ExitCode()
}

func signalName(s syscall.Signal) string {
	if s == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}
