package vocab

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestTableIsAFunction(t *testing.T) {
	if Size != 115 {
		t.Fatalf("Size = %d, want 115 (114 symbols and the pad)", Size)
	}
	seenSym := map[rune]bool{}
	seenID := map[int64]bool{}
	for _, e := range table {
		if seenSym[e.sym] || seenID[e.id] {
			t.Fatalf("duplicate entry %q → %d", e.sym, e.id)
		}
		seenSym[e.sym], seenID[e.id] = true, true
		if e.id < 0 || e.id > 177 {
			t.Errorf("%q has id %d outside the model's 178 embedding rows", e.sym, e.id)
		}
		if id, ok := ID(e.sym); !ok || id != e.id {
			t.Errorf("ID(%q) = %d, %v; want %d", e.sym, id, ok, e.id)
		}
		if r, ok := Symbol(e.id); !ok || r != e.sym {
			t.Errorf("Symbol(%d) = %q, %v; want %q", e.id, r, ok, e.sym)
		}
	}
}

func TestIDSpotChecks(t *testing.T) {
	// Values from kokoro-js's tokenizer.json.
	for _, c := range []struct {
		r  rune
		id int64
	}{{'$', 0}, {';', 1}, {'—', 9}, {' ', 16}, {'\u0303', 17}, {'a', 43}, {'ɹ', 123}, {'ˈ', 156}, {'ˌ', 157}, {'ː', 158}, {'ᵻ', 177}, {'ꭧ', 23}} {
		if id, ok := ID(c.r); !ok || id != c.id {
			t.Errorf("ID(%q) = %d, %v; want %d", c.r, id, ok, c.id)
		}
	}
	for _, r := range []rune{'«', '»', 'g', 'ɬ', '\u0329', -1, 0x10ffff, 'B'} {
		if id, ok := ID(r); ok {
			t.Errorf("ID(%q) = %d, want absent", r, id)
		}
	}
}

func TestEncode(t *testing.T) {
	for _, c := range []struct {
		name, ph string
		ids      []int64
		dropped  string
	}{
		// The golden hello sentence (../shared/golden/kokoro/README.md).
		{"hello", "həlˈoʊ wˈɜːld.", []int64{0, 50, 83, 54, 156, 57, 135, 16, 65, 156, 87, 158, 54, 46, 4, 0}, ""},
		{"empty", "", []int64{0, 0}, ""},
		// kokoro-js turns brackets into «», which the vocabulary lacks.
		{"guillemets", "«a»", []int64{0, 43, 0}, "«»"},
		{"syllabic n", "pˈæʔn̩t", []int64{0, 58, 156, 72, 148, 56, 62, 0}, "\u0329"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, dropped, err := Encode(c.ph)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, c.ids) {
				t.Errorf("ids = %v, want %v", ids, c.ids)
			}
			if string(dropped) != c.dropped {
				t.Errorf("dropped = %q, want %q", string(dropped), c.dropped)
			}
			if n := Count(c.ph); n != len(c.ids)-2 {
				t.Errorf("Count = %d, want %d", n, len(c.ids)-2)
			}
			back, err := Decode(ids)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Map(func(r rune) rune {
				if strings.ContainsRune(c.dropped, r) {
					return -1
				}
				return r
			}, c.ph)
			if back != want {
				t.Errorf("Decode = %q, want %q", back, want)
			}
		})
	}
}

func TestEncodeLimit(t *testing.T) {
	if _, _, err := Encode(strings.Repeat("a", MaxPhonemes)); err != nil {
		t.Fatalf("%d tokens: %v", MaxPhonemes, err)
	}
	// Dropped characters do not count towards the limit.
	if _, _, err := Encode(strings.Repeat("a", MaxPhonemes) + "«»"); err != nil {
		t.Fatalf("%d tokens and two dropped: %v", MaxPhonemes, err)
	}
	_, _, err := Encode(strings.Repeat("a", MaxPhonemes+1))
	if !errors.Is(err, ErrTooLong) {
		t.Fatalf("%d tokens: err = %v, want ErrTooLong", MaxPhonemes+1, err)
	}
}

func TestDecodeUnknown(t *testing.T) {
	for _, id := range []int64{7, 8, 178, -1} {
		if _, err := Decode([]int64{0, id, 0}); !errors.Is(err, ErrUnknownID) {
			t.Errorf("Decode(%d): err = %v, want ErrUnknownID", id, err)
		}
	}
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "həlˈoʊ wˈɜːld.", "«»", "\xff", strings.Repeat("ə", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, dropped, err := Encode(s)
		n := Count(s)
		if n > MaxPhonemes {
			if !errors.Is(err, ErrTooLong) {
				t.Fatalf("%d tokens: err = %v", n, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != n+2 || ids[0] != Pad || ids[len(ids)-1] != Pad {
			t.Fatalf("ids %v for %d tokens", ids, n)
		}
		if n+len(dropped) != len([]rune(s)) {
			t.Fatalf("%d kept + %d dropped != %d runes", n, len(dropped), len([]rune(s)))
		}
		if _, err := Decode(ids); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	ph := "ðə kwˈɪk bɹˈaʊn fˈɑːks dʒˈʌmps ˌoʊvɚ ðə lˈeɪzi dˈɑːɡ."
	b.SetBytes(int64(len(ph)))
	for b.Loop() {
		if _, _, err := Encode(ph); err != nil {
			b.Fatal(err)
		}
	}
}
