package whisper

import (
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"strings"
	"testing"
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
