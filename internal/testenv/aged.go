package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// AgedFile is an empty file of a pruning test: its name in the test's
// directory, how long ago it was last modified, and whether the pruning
// must keep it.
type AgedFile struct {
	Name string
	Age  time.Duration
	Kept bool
}

// CheckPruned writes files into dir, each last modified its Age ago, runs
// prune, and reports every file whose presence afterwards is not its Kept.
// The derived-file caches (silence tails, weight packs) prune by age and by
// count, and their tests differ only in the files and the call.
func CheckPruned(t testing.TB, dir string, files []AgedFile, prune func()) {
	t.Helper()
	now := time.Now()
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now, now.Add(-f.Age)); err != nil {
			t.Fatal(err)
		}
	}
	prune()
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.Name))
		if kept := err == nil; kept != f.Kept {
			t.Errorf("%s: kept %v, want %v", f.Name, kept, f.Kept)
		}
	}
}
