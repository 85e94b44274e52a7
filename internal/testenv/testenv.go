// Package testenv finds what Forge's tests read from outside the
// repository: the ../shared directory beside the checkout (golden outputs,
// real speech). Tests skip loudly, naming the missing path, when a user's
// checkout has no ../shared; CI always has it.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from
// the test's working directory (its package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testenv: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// SharedDir returns ../shared beside the repository root.
func SharedDir(t testing.TB) string {
	t.Helper()
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
