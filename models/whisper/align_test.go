package whisper

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/weights"
)

// b85decode is Python's base64.b85decode (RFC 1924's alphabet), enough to
// read openai-whisper's _ALIGNMENT_HEADS.
func b85decode(t *testing.T, s string) []byte {
	t.Helper()
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
	pad := (5 - len(s)%5) % 5
	s += strings.Repeat("~", pad)
	var out []byte
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for _, c := range s[i : i+5] {
			d := strings.IndexRune(alphabet, c)
			if d < 0 {
				t.Fatalf("not base85: %q", c)
			}
			v = v*85 + uint64(d)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out[:len(out)-pad]
}

// TestAlignmentHeads: the table equals openai-whisper's _ALIGNMENT_HEADS
// (gzip'ed (layers × heads) booleans in base85, copied from its
// whisper/__init__.py) for the models Forge ships.
func TestAlignmentHeads(t *testing.T) {
	for _, c := range []struct {
		id, b85       string
		layers, heads int
	}{
		{"whisper-tiny", "ABzY8bu8Lr0{>%RKn9Fp%m@SkK7Kt=7ytkO", 4, 6},
		{"whisper-base", "ABzY8KQ!870{>%RzyTQH3`Q^yNP!>##QT-<FaQ7m", 6, 8},
		{"whisper-small", "ABzY8DmU6=0{>%Rpa?J`kvJ6qF(V^F86#Xh7JUGMK}P<N0000", 12, 12},
	} {
		zr, err := gzip.NewReader(bytes.NewReader(b85decode(t, c.b85)))
		if err != nil {
			t.Fatal(err)
		}
		mask, err := io.ReadAll(zr)
		if err != nil || len(mask) != c.layers*c.heads {
			t.Fatalf("%s: %d booleans (%v), want %d", c.id, len(mask), err, c.layers*c.heads)
		}
		var want []Head
		for i, b := range mask {
			if b != 0 {
				want = append(want, Head{i / c.heads, i % c.heads})
			}
		}
		if got := (&Model{id: c.id}).AlignmentHeads(); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", c.id, got, want)
		}
	}
	if got := (&Model{id: "whisper-large"}).AlignmentHeads(); got != nil {
		t.Errorf("unknown model: %v", got)
	}
}

// TestAlignmentHeadsMatchGenerationConfig: the Hugging Face export of each
// size carries the same heads as generation_config.json's alignment_heads
// ([layer, head] pairs); a second source for the table above, read from
// the model cache (sizes not fetched are skipped).
func TestAlignmentHeadsMatchGenerationConfig(t *testing.T) {
	for _, size := range Models() {
		id, err := ArtifactID(size)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(size, func(t *testing.T) {
			a, err := weights.Open(id)
			if errors.Is(err, weights.ErrNotReady) {
				t.Skipf("SKIPPED: %s is not in the model cache: run `go run ./cmd/models fetch %s`", id, id)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := a.ReadFile("generation_config.json")
			if err != nil {
				t.Fatal(err)
			}
			var gc struct {
				AlignmentHeads [][2]int `json:"alignment_heads"`
			}
			if err := json.Unmarshal(b, &gc); err != nil {
				t.Fatal(err)
			}
			var want []Head
			for _, h := range gc.AlignmentHeads {
				want = append(want, Head{h[0], h[1]})
			}
			if got := (&Model{id: id}).AlignmentHeads(); len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("table %v, generation_config.json %v", got, want)
			}
		})
	}
}
