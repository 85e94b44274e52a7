package g2p

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"

	"github.com/tensorforge/forge/models/kokoro/espeak"
	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// goldenCase is the part of a ../shared/golden/kokoro/*.json file this
// package checks.
type goldenCase struct {
	Text     string   `json:"text"`
	LangCode string   `json:"lang_code"`
	Phonemes string   `json:"phonemes"`
	InputIDs []int64  `json:"input_ids"`
	Dropped  []string `json:"chars_dropped_by_tokenizer"`
}

// goldenDir locates ../shared/golden/kokoro, skipping the test loudly when
// it is absent.
func goldenDir(t testing.TB) string { return testenv.Shared(t, "golden", "kokoro") }

// engine returns the espeak-ng engine, skipping loudly when the library
// is not installed.
func engine(t testing.TB) *espeak.Engine {
	t.Helper()
	e, err := espeak.Default()
	if errors.Is(err, espeak.ErrLibraryNotFound) {
		t.Skipf("ESPEAK-NG MISSING, test not run: %v (run: make deps, or %s)", err, espeak.InstallHint)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestGolden(t *testing.T) {
	dir := goldenDir(t)
	e := engine(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "tolerance_evidence.json" {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c goldenCase
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			lang, err := ParseLang(c.LangCode)
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(e, lang)
			if err != nil {
				t.Fatal(err)
			}
			ph, err := g.Phonemize(c.Text)
			if err != nil {
				t.Fatal(err)
			}
			if ph != c.Phonemes {
				t.Errorf("phonemes of %q:\n got %q\nwant %q", c.Text, ph, c.Phonemes)
			}
			ids, dropped, err := vocab.Encode(ph)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, c.InputIDs) {
				t.Errorf("ids of %q:\n got %v\nwant %v", c.Text, ids, c.InputIDs)
			}
			var droppedS []string
			for _, r := range dropped {
				droppedS = append(droppedS, string(r))
			}
			if len(droppedS) != len(c.Dropped) || !slices.Equal(droppedS, c.Dropped) {
				t.Errorf("dropped characters: got %q, want %q", droppedS, c.Dropped)
			}
		})
	}
	if n != 6 {
		t.Errorf("found %d golden cases in %s, want 6", n, dir)
	}
}
