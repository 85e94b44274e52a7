package tokenizer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/models/whisper/tokenizer/tokenizertest"
)

type golden struct {
	Text               string  `json:"text"`
	TextWithTimestamps string  `json:"text_with_timestamps"`
	TokenIDs           []int32 `json:"token_ids"`
	TokenIDsTimestamps []int32 `json:"token_ids_timestamps"`
}

func goldens(t *testing.T) map[string]golden {
	t.Helper()
	out := map[string]golden{}
	for _, model := range []string{"whisper-tiny", "whisper-base"} {
		dir := tokenizertest.GoldenDir(t, model)
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if filepath.Base(f) == "tolerance_evidence.json" {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var g golden
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(g.TokenIDs) == 0 || g.Text == "" {
				t.Fatalf("%s: no token_ids or text", f)
			}
			out[model+"/"+filepath.Base(f)] = g
		}
	}
	if len(out) < 8 {
		t.Fatalf("found %d golden clips, want the 7 tiny clips and base's jfk", len(out))
	}
	return out
}

// TestDecodeGoldens decodes the golden token ids to the golden texts exactly,
// as transformers.js did when it made them (skip_special_tokens, with the
// tokenizer_config's clean-up).
func TestDecodeGoldens(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	for name, g := range goldens(t) {
		t.Run(name, func(t *testing.T) {
			js := tokenizer.DecodeOptions{Timestamps: true, CleanUp: true}
			got, err := tok.DecodeWith(g.TokenIDs, js)
			if err != nil {
				t.Fatal(err)
			}
			if got != g.Text {
				t.Errorf("text:\n got %q\nwant %q", got, g.Text)
			}
			got, err = tok.DecodeWith(g.TokenIDsTimestamps, js)
			if err != nil {
				t.Fatal(err)
			}
			if got != g.TextWithTimestamps {
				t.Errorf("text with timestamps:\n got %q\nwant %q", got, g.TextWithTimestamps)
			}
			// Plain Decode drops timestamps; these texts need no clean-up.
			for _, ids := range [][]int32{g.TokenIDs, g.TokenIDsTimestamps} {
				got, err := tok.Decode(ids)
				if err != nil {
					t.Fatal(err)
				}
				if got != g.Text {
					t.Errorf("Decode:\n got %q\nwant %q", got, g.Text)
				}
			}
		})
	}
}

// TestEncodeGoldens checks that encoding a golden text gives the model's own
// text tokens: the model emits the canonical BPE split for these plain
// English sentences.
func TestEncodeGoldens(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	sp := tok.Specials()
	for name, g := range goldens(t) {
		t.Run(name, func(t *testing.T) {
			var want []int32
			for _, id := range g.TokenIDs {
				if id < sp.EOT {
					want = append(want, id)
				}
			}
			got, err := tok.Encode(g.Text)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("Encode(%q)\n got %v\nwant %v", g.Text, got, want)
			}
			withTS, err := tok.EncodeSpecial(g.TextWithTimestamps)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(withTS, g.TokenIDsTimestamps[3:len(g.TokenIDsTimestamps)-1]) {
				t.Errorf("EncodeSpecial(%q)\n got %v\nwant %v", g.TextWithTimestamps, withTS, g.TokenIDsTimestamps[3:len(g.TokenIDsTimestamps)-1])
			}
		})
	}
}
