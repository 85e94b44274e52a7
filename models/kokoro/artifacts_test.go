package kokoro

import (
	"testing"

	"github.com/tensorforge/forge/weights"
)

// TestArtifacts checks Kokoro's source table against MODELS.md: the fp32
// model in 19 parts, 54 voices with the four pinned ones.
func TestArtifacts(t *testing.T) {
	k, err := weights.Lookup(weights.KokoroV1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(k.Files[0].Parts); n != 19 {
		t.Errorf("Kokoro fp32 has %d parts, want 19", n)
	}
	v, err := weights.Lookup(weights.KokoroVoices)
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{
		"af_heart.bin":   "d583ccff3cdca2f7fae535cb998ac07e9fcb90f09737b9a41fa2734ec44a8f0b",
		"am_michael.bin": "1d1f21dd8da39c30705cd4c75d039d265e9bc4a2a93ed09bc9e1b1225eb95ba1",
		"af_bella.bin":   "f69d836209b78eb8c66e75e3cda491e26ea838a3674257e9d4e5703cbaf55c8b",
		"bf_emma.bin":    "669fe0647f9dd04fcab92f1439a40eeb4c8b4ab1f82e4996fe3d918ce4a63b73",
	}
	if len(v.Files) != 54 {
		t.Errorf("%d voices, want 54", len(v.Files))
	}
	for _, f := range v.Files {
		if want, ok := pinned[f.Name]; ok && f.SHA256 != want {
			t.Errorf("%s: sha256 %s, MODELS.md says %s", f.Name, f.SHA256, want)
		}
		delete(pinned, f.Name)
	}
	if len(pinned) != 0 {
		t.Errorf("voices missing: %v", pinned)
	}
}
