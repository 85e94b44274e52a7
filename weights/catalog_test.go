package weights

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tensorforge/forge/weights/fetch"
)

func TestCatalog(t *testing.T) {
	if got, want := len(IDs()), 7; got != want {
		t.Fatalf("%d models, want %d", got, want)
	}
	for _, m := range Models() {
		if m.Description == "" || len(m.Files) == 0 {
			t.Errorf("%s: empty entry", m.ID)
		}
		seen := map[string]bool{}
		for _, f := range m.Files {
			if seen[f.Name] {
				t.Errorf("%s: file %s listed twice", m.ID, f.Name)
			}
			seen[f.Name] = true
			if b, err := hex.DecodeString(f.SHA256); err != nil || len(b) != 32 {
				t.Errorf("%s/%s: bad sha256 %q", m.ID, f.Name, f.SHA256)
			}
			if f.Size <= 0 || len(f.Parts) == 0 || f.Upstream.Repo == "" || f.Upstream.Path == "" {
				t.Errorf("%s/%s: incomplete entry %+v", m.ID, f.Name, f)
			}
			var sum int64
			for _, p := range f.Parts {
				sum += p.Size
				if p.Package.Name == "" || p.Package.Version == "" || p.Package.Integrity == "" || p.Path == "" {
					t.Errorf("%s/%s: incomplete part %+v", m.ID, f.Name, p)
				}
				if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 {
					t.Errorf("%s/%s: part %s: bad sha256", m.ID, f.Name, p.Path)
				}
			}
			if sum != f.Size {
				t.Errorf("%s/%s: parts hold %d bytes, file %d", m.ID, f.Name, sum, f.Size)
			}
		}
	}
	k, _ := Lookup(KokoroV1)
	if n := len(k.Files[0].Parts); n != 19 {
		t.Errorf("Kokoro fp32 has %d parts, want 19", n)
	}
	// The four voices pinned in MODELS.md.
	v, _ := Lookup(KokoroVoices)
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
	if _, err := Lookup("whisper-huge"); err == nil {
		t.Error("Lookup of an unknown id succeeded")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("FORGE_MODELS", "/x/models")
	t.Setenv("XDG_CACHE_HOME", "/y")
	if d, _ := DefaultDir(); d != "/x/models" {
		t.Errorf("with FORGE_MODELS: %s", d)
	}
	t.Setenv("FORGE_MODELS", "")
	if d, _ := DefaultDir(); d != "/y/forge/models" {
		t.Errorf("with XDG_CACHE_HOME: %s", d)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := DefaultDir(); d != "/home/u/.cache/forge/models" {
		t.Errorf("with HOME only: %s", d)
	}
}

// TestEnsureRepairsDamage damages a copy of the Silero VAD cache entry in
// a fresh cache and checks that Open refuses it and Ensure restores it:
// a truncated source is re-fetched, a missing manifest re-converted.
func TestEnsureRepairsDamage(t *testing.T) {
	real := openReal(t, SileroVADv6)
	if !fetch.HaveNpm() {
		t.Skip("SKIPPING: npm is not installed; the repair path re-fetches with npm")
	}
	root := t.TempDir()
	c := &Cache{Root: root}
	src, _ := real.Path("silero_vad.onnx")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// A truncated source (as if written by something other than Ensure).
	dst := c.src(SileroVADv6, "silero_vad.onnx")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(SileroVADv6); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Open of a damaged entry: %v, want ErrNotReady", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Ensure(ctx, SileroVADv6); err != nil {
		t.Fatal(err)
	}
	a, err := c.Open(SileroVADv6)
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, a, real)
	a.Close()
	// A source whose bytes rotted in place (same size): conversion re-hashes
	// and refuses it.
	b[100] ^= 0xff
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(c.manifestPath(SileroVADv6))
	err = c.Ensure(ctx, SileroVADv6)
	if !errors.Is(err, fetch.ErrChecksum) {
		t.Fatalf("Ensure over a corrupt source: %v, want a checksum error", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Error("corrupt source left in place")
	}
	// Running again fetches it afresh.
	if err := c.Ensure(ctx, SileroVADv6); err != nil {
		t.Fatal(err)
	}
	// No temporaries are left behind.
	matches, _ := filepath.Glob(filepath.Join(root, "*", "*", ".*.tmp-*"))
	more, _ := filepath.Glob(filepath.Join(root, ".npm-*"))
	if len(matches)+len(more) > 0 {
		t.Errorf("temporaries left: %v %v", matches, more)
	}
}

func TestEnsureWithoutNpm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c := &Cache{Root: t.TempDir()}
	err := c.Ensure(context.Background(), SileroVADv6)
	if !errors.Is(err, fetch.ErrNoNpm) {
		t.Fatalf("Ensure without npm: %v, want ErrNoNpm", err)
	}
	if _, err := os.Stat(c.manifestPath(SileroVADv6)); !os.IsNotExist(err) {
		t.Error("manifest written without a fetch")
	}
}

// sameTensors checks that two artifacts hold the same tensors, byte for
// byte. Whole-file hashes are not compared: a cache converted by an older
// writer lays the same tensors out differently.
func sameTensors(t *testing.T, got, want *Artifact) {
	t.Helper()
	if g, w := got.Names(), want.Names(); !slices.Equal(g, w) {
		t.Fatalf("tensors %v, want %v", g, w)
	}
	for _, n := range want.Names() {
		g, _ := got.Tensor(n)
		w, _ := want.Tensor(n)
		if g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("%s: %s%v differs from %s%v", n, g.DType, g.Shape, w.DType, w.Shape)
		}
	}
}
