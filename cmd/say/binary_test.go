package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
)

// exitGrace bounds every wait on the say process: a guard against a test
// hanging on a process that never stops or never writes (the failures
// tested for), not a measure of speed.
const exitGrace = 2 * time.Minute

// sayProc is a running say binary.
type sayProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	stdout bytes.Buffer // guarded by mu
	stderr bytes.Buffer
	done   chan struct{} // closed when the process has exited
}

// lockedWriter appends to a buffer under the process's lock, so the test
// can watch stdout grow while the process writes it.
type lockedWriter struct{ p *sayProc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.stdout.Write(b)
}

func (p *sayProc) stdoutBytes() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.stdout.Bytes())
}

// startSay starts bin in dir with args; its stdin stays open until the
// test closes it. fsize > 0 limits the size of any file it writes
// (RLIMIT_FSIZE: the unprivileged stand-in for a full disk).
func startSay(t *testing.T, bin, dir string, fsize uint64, args ...string) *sayProc {
	t.Helper()
	p := &sayProc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{p}, &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if fsize > 0 {
		var saved syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &saved); err != nil {
			t.Skipf("getrlimit: %v", err)
		}
		lim := saved
		lim.Cur = fsize
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Skipf("setrlimit: %v", err)
		}
		err = p.cmd.Start() // the child inherits the limit
		if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &saved); rerr != nil {
			t.Fatal(rerr)
		}
	} else {
		err = p.cmd.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitUntil polls cond until it holds; it fails if say exits first.
func (p *sayProc) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(exitGrace)
	for !cond() {
		select {
		case <-p.done:
			t.Fatalf("say exited (status %d) before %s; stderr %q", p.cmd.ProcessState.ExitCode(), what, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, exitGrace)
		}
	}
}

// exit waits for say to end and returns its status.
func (p *sayProc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(exitGrace):
		t.Fatalf("say did not exit within %v", exitGrace)
	}
	return p.cmd.ProcessState.ExitCode()
}

// tempFiles returns the temporary outputs in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBinaryOutputFile runs the built say: -o FILE.wav appears whole or
// not at all. A signal while it writes exits 130/143 and leaves the old
// file (or none) and no temporary file; so does a failed run, and a disk
// that fills up, with an error naming the file; a stream (-o -) stopped by
// a signal is a valid WAV of whole samples.
func TestBinaryOutputFile(t *testing.T) {
	needSynthesis(t, "loads Kokoro in several processes")
	bin := testenv.Build(t, "cmd/say")
	const old = "the previous take"
	// Text that stays open on stdin: the first sentence is spoken, and say
	// then waits for the rest, which never comes.
	const opening = "Hello there. This sentence is never finished, because"

	for _, c := range []struct {
		name string
		sig  syscall.Signal
		code int
		old  bool // FILE.wav exists before
	}{
		{"SIGTERM over an old file", syscall.SIGTERM, 143, true},
		{"SIGINT, new file", syscall.SIGINT, 130, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "v.wav")
			if c.old {
				if err := os.WriteFile(out, []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := startSay(t, bin, dir, 0, "-o", "v.wav")
			io.WriteString(p.stdin, opening)
			p.waitUntil(t, "audio in the temporary file", func() bool {
				for _, f := range tempFiles(t, dir) {
					if fi, err := os.Stat(f); err == nil && fi.Size() > 44 {
						return true
					}
				}
				return false
			})
			p.cmd.Process.Signal(c.sig)
			code := p.exit(t)
			if code != c.code || !strings.Contains(p.stderr.String(), "interrupted by") {
				t.Errorf("exit %d, stderr %q; want %d and the signal named", code, p.stderr.String(), c.code)
			}
			checkUntouched(t, dir, out, c.old, old)
		})
	}

	t.Run("stream stopped by SIGINT", func(t *testing.T) {
		p := startSay(t, bin, t.TempDir(), 0, "-o", "-")
		io.WriteString(p.stdin, opening)
		p.waitUntil(t, "audio on stdout", func() bool { return len(p.stdoutBytes()) > 44+2*2400 })
		p.cmd.Process.Signal(syscall.SIGINT)
		if code := p.exit(t); code != 130 {
			t.Errorf("exit %d, stderr %q; want 130", code, p.stderr.String())
		}
		c, err := audio.ReadWAV(bytes.NewReader(p.stdoutBytes()))
		if err != nil || c.SampleRate != 24000 || len(c.Samples) < 2400 {
			t.Errorf("the stream reads as %d samples at %d Hz, %v; want a valid WAV of whole samples", len(c.Samples), c.SampleRate, err)
		}
	})

	long := strings.Repeat("This sentence fills the disk one word at a time. ", 20)
	for _, c := range []struct {
		name  string
		out   string // -o
		fsize uint64
		text  string
		msg   string // in stderr
	}{
		{"full disk", "v.wav", 64 << 10, long, "write v.wav: file too large"},
		{"device full", "/dev/full", 0, "Hello.", "write /dev/full: no space left on device"},
		{"nothing to say", "v.wav", 0, " ", "nothing to say"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.out == "/dev/full" {
				if _, err := os.Stat(c.out); err != nil {
					t.Skip("no /dev/full")
				}
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "v.wav")
			if err := os.WriteFile(out, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			p := startSay(t, bin, dir, c.fsize, "-o", c.out, c.text)
			p.stdin.Close()
			if code := p.exit(t); code != exitError || !strings.Contains(p.stderr.String(), c.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, p.stderr.String(), exitError, c.msg)
			}
			checkUntouched(t, dir, out, true, old)
		})
	}

	t.Run("success replaces", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "v.wav")
		if err := os.WriteFile(out, []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startSay(t, bin, dir, 0, "-o", "v.wav", "Hello.")
		p.stdin.Close()
		if code := p.exit(t); code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, p.stderr.String())
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := audio.NewWAVReader(f)
		if err != nil || r.Frames() <= 0 {
			t.Fatalf("v.wav: %v; want a WAV with its sizes patched", err)
		}
		if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("permissions %v, %v; want the old file's 0600", fi.Mode().Perm(), err)
		}
		if l := tempFiles(t, dir); len(l) != 0 {
			t.Errorf("temporary files left: %v", l)
		}
	})
}

// checkUntouched fails unless out holds old (or, with hadOld false, does
// not exist) and dir has no temporary file.
func checkUntouched(t *testing.T, dir, out string, hadOld bool, old string) {
	t.Helper()
	b, err := os.ReadFile(out)
	switch {
	case hadOld && (err != nil || string(b) != old):
		t.Errorf("%s holds %q, %v; want the old content kept", out, b, err)
	case !hadOld && !errors.Is(err, os.ErrNotExist):
		t.Errorf("%s exists (%d bytes, %v); want no file", out, len(b), err)
	}
	if l := tempFiles(t, dir); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}
