package weights

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/weights/fetch"
)

func TestCatalog(t *testing.T) {
	if got, want := IDs(), Catalog(); !slices.Equal(got, want) {
		t.Fatalf("registered %v, want the catalog %v (registry_test.go imports every model package)", got, want)
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

// TestRegister: the registry refuses a second entry for an id and an
// incomplete entry, and names the package of a catalog id it lacks.
func TestRegister(t *testing.T) {
	fixture := Model{ID: "test-fixture", Description: "test", Files: []File{{Name: "a"}}}
	Register(fixture)
	t.Cleanup(func() {
		registryMu.Lock()
		delete(registry, fixture.ID)
		registryMu.Unlock()
	})
	if m, err := Lookup(fixture.ID); err != nil || m.Description != "test" {
		t.Fatalf("Lookup after Register: %+v, %v", m, err)
	}
	for _, c := range []struct {
		name string
		m    Model
	}{
		{"twice", fixture},
		{"no id", Model{Files: fixture.Files}},
		{"no files", Model{ID: "test-empty"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			Register(c.m)
		})
	}
	// A catalog id the program has not registered.
	registryMu.Lock()
	saved := registry[SileroVADv6]
	delete(registry, SileroVADv6)
	registryMu.Unlock()
	defer func() {
		registryMu.Lock()
		registry[SileroVADv6] = saved
		registryMu.Unlock()
	}()
	if _, err := Lookup(SileroVADv6); err == nil || !strings.Contains(err.Error(), "models/vad") {
		t.Errorf("Lookup of an unregistered catalog id: %v, want a message naming models/vad", err)
	}
}
