package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
)

// TestBinaryExitCodes runs the built models: --help exits 0, a bad
// command line 2, a failed run 1 (here: a model the empty cache lacks,
// with no npm to fetch it), as every Forge command.
func TestBinaryExitCodes(t *testing.T) {
	bin := testenv.Build(t, "cmd/models")
	env := append(os.Environ(), "FORGE_MODELS="+t.TempDir(), "PATH="+t.TempDir())
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--help"}, 0, ""},
		{nil, 2, "no command"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"--nope"}, 2, `unknown command "--nope"`},
		{[]string{"list"}, 2, "usage: models list ID"},
		{[]string{"fetch", "nope"}, 2, `unknown model "nope"`},
		{[]string{"verify", "nope"}, 2, `unknown model "nope"`},
		{[]string{"list", "silero-vad-v6"}, 1, "silero-vad-v6"},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = env
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != c.code || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("models %q: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.stderr)
		}
	}
}
