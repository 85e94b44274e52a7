package testenv

import (
	"path/filepath"
	"testing"
)

// TestSharedDir: ../shared beside the repository root, unless
// $FORGE_SHARED names another folder.
func TestSharedDir(t *testing.T) {
	beside := filepath.Join(RepoRoot(t), "..", "shared")
	for _, c := range []struct {
		env, want string
	}{
		{"", beside},
		{"/tmp/carried/shared", "/tmp/carried/shared"},
	} {
		t.Setenv("FORGE_SHARED", c.env)
		if got := SharedDir(t); got != c.want {
			t.Errorf("FORGE_SHARED=%q: SharedDir = %s, want %s", c.env, got, c.want)
		}
	}
}
