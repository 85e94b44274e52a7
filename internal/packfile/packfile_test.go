package packfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write makes a pack file of blobs (key, bytes pairs) under key and
// returns its path.
func write(t testing.TB, key string, blobs ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "packs.bin")
	w, err := Create(p, KeySum(key))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(blobs); i += 2 {
		if err := w.Add(blobs[i], []byte(blobs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRoundTrip checks that every blob written comes back, in place,
// aligned, with its bytes, and that absent keys are absent.
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name  string
		blobs []string
	}{
		{"none", nil},
		{"one", []string{"a", "hello"}},
		{"empty blob", []string{"a", "", "b", "x"}},
		{"odd sizes", []string{"conv/1", strings.Repeat("x", 63), "conv/2", strings.Repeat("y", 65), "conv/3", strings.Repeat("z", 4096)}},
		{"empty key", []string{"", "v"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(write(t, "weights v1", c.blobs...), KeySum("weights v1"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := len(f.Keys()); got != len(c.blobs)/2 {
				t.Errorf("%d keys, want %d", got, len(c.blobs)/2)
			}
			for i := 0; i < len(c.blobs); i += 2 {
				b, ok := f.Get(c.blobs[i])
				if !ok || string(b) != c.blobs[i+1] {
					t.Errorf("Get(%q) = %q, %v; want %q", c.blobs[i], b, ok, c.blobs[i+1])
				}
				if e := f.ix.blobs[c.blobs[i]]; e.off%Align != 0 {
					t.Errorf("blob %q at %d, not %d-aligned", c.blobs[i], e.off, Align)
				}
			}
			if _, ok := f.Get("missing"); ok {
				t.Error("Get found a key never written")
			}
		})
	}
}

// TestDuplicateKey checks that a Writer refuses a key twice.
func TestDuplicateKey(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "p.bin"), KeySum("k"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Add("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("a", []byte("2")); err == nil {
		t.Error("a second blob under the same key was accepted")
	}
}

// TestRefused checks that a file that does not match or does not check
// out is refused whole, and that a damaged blob is refused alone.
func TestRefused(t *testing.T) {
	blobs := []string{"a", strings.Repeat("A", 200), "b", strings.Repeat("B", 100)}
	for _, c := range []struct {
		name   string
		key    string              // opened with this key
		damage func([]byte) []byte // applied to the file's bytes
		open   bool                // Open succeeds
		a, b   bool                // Get("a"), Get("b") succeed
	}{
		{"intact", "k", nil, true, true, true},
		{"other key", "other CPU path", nil, false, false, false},
		{"magic", "k", func(d []byte) []byte { d[0] ^= 1; return d }, false, false, false},
		{"header bit", "k", func(d []byte) []byte { d[13] ^= 1; return d }, false, false, false},
		{"index bit", "k", func(d []byte) []byte { d[len(d)-3] ^= 1; return d }, false, false, false},
		{"truncated", "k", func(d []byte) []byte { return d[:len(d)-1] }, false, false, false},
		{"short", "k", func(d []byte) []byte { return d[:40] }, false, false, false},
		{"appended", "k", func(d []byte) []byte { return append(d, 0) }, false, false, false},
		{"blob a bit", "k", func(d []byte) []byte { d[64+7] ^= 0x80; return d }, true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, "k", blobs...)
			if c.damage != nil {
				d, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, c.damage(d), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Open(p, KeySum(c.key))
			if (err == nil) != c.open {
				t.Fatalf("Open: %v, want success %v", err, c.open)
			}
			if err != nil {
				return
			}
			defer f.Close()
			for i, want := range []bool{c.a, c.b} {
				k := blobs[2*i]
				b, ok := f.Get(k)
				if ok != want {
					t.Errorf("Get(%q) ok = %v, want %v", k, ok, want)
				}
				if ok && string(b) != blobs[2*i+1] {
					t.Errorf("Get(%q) = wrong bytes", k)
				}
				if _, again := f.Get(k); again != ok {
					t.Errorf("a second Get(%q) = %v, the first %v", k, again, ok)
				}
			}
		})
	}
}

// TestMissing checks that a missing file or directory is an error that
// says so, and that an empty file is refused.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "none", "p.bin"), KeySum("k")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
	if _, err := Create(filepath.Join(dir, "none", "p.bin"), KeySum("k")); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
	empty := filepath.Join(dir, "empty.bin")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty, KeySum("k")); err == nil {
		t.Error("Open of an empty file succeeded")
	}
}

// FuzzParse feeds the parser arbitrary files: it must never panic, and
// every blob of an index it accepts must lie inside the file.
func FuzzParse(f *testing.F) {
	key := KeySum("k")
	for _, blobs := range [][]string{nil, {"a", "x"}, {"a", strings.Repeat("y", 100), "bb", "z"}} {
		d, err := os.ReadFile(write(f, "k", blobs...))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		ix, err := parse(d, key)
		if err != nil {
			return
		}
		for _, k := range ix.keys {
			e := ix.blobs[k]
			if e.off+e.n > uint64(len(d)) || e.off%Align != 0 {
				t.Fatalf("blob %q at %d+%d outside a %d-byte file", k, e.off, e.n, len(d))
			}
			if b, ok := ix.get(k); ok && !bytes.Equal(b, d[e.off:e.off+e.n]) {
				t.Fatalf("blob %q bytes differ from the file's", k)
			}
		}
	})
}
