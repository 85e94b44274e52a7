package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
)

// TestBinaryExitCodes runs the built forge-report: -h exits 0, a bad
// command line 2, a failed run 1, as every Forge command.
func TestBinaryExitCodes(t *testing.T) {
	bin := testenv.Build(t, "cmd/forge-report")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-h"}, 0, "usage: forge-report"},
		{[]string{"--help"}, 0, "usage: forge-report"},
		{[]string{"--nope"}, 2, "flag provided but not defined"},
		{nil, 2, "no scorecard files"},
		{[]string{"-date", "soon", dir}, 2, `-date "soon"`},
		{[]string{"diff", "a"}, 2, "diff needs BASE and HEAD"},
		{[]string{"-out", dir, missing}, 1, "missing.json"},
	} {
		cmd := exec.Command(bin, c.args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != c.code || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("forge-report %q: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.stderr)
		}
	}
}
