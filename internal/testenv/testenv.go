// Package testenv finds what Forge's tests read from outside the
// repository: the ../shared directory beside the checkout (golden outputs,
// real speech; $FORGE_SHARED elsewhere). Tests skip loudly, naming the missing path, when a user's
// checkout has no ../shared; CI always has it. It also builds the
// commands that CLI-level tests run.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from
// the test's working directory (its package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// SharedDir returns ../shared beside the repository root, or the folder
// $FORGE_SHARED names: a machine that runs carried test binaries (the lent
// GPU's) may not be able to write beside the checkout it was given.
func SharedDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("FORGE_SHARED"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(t), "..", "shared")
}

// Shared returns the path of elem under ../shared, skipping the test loudly
// when it does not exist.
func Shared(t testing.TB, elem ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{SharedDir(t)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SKIPPED: %s is missing (%v): these tests read ../shared beside the repository", p, err)
	}
	return p
}

// Build compiles the command in pkg (a directory relative to the
// repository root, such as "cmd/listen") into a temporary directory and
// returns the binary's path, for tests of what only a process shows: exit
// statuses, signals, files left behind. It uses the go command on $PATH,
// where `go test` puts the toolchain that runs the test.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("SKIPPED: no go command on $PATH to build %s: %v", pkg, err)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command(goTool, "build", "-o", bin, "./"+filepath.ToSlash(pkg))
	cmd.Dir = RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
