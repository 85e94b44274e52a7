package weights

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/weights/fetch"
)

// copyEntry copies the cache entry of id (sources, weights, manifest; not
// the record of verified files) from the default cache into a fresh cache,
// so that a test can damage it. It returns the fresh cache and the real
// artifact.
func copyEntry(t *testing.T, id string) (*Cache, *Artifact) {
	t.Helper()
	real := openReal(t, id)
	c := &Cache{Root: t.TempDir()}
	err := filepath.Walk(real.Dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(real.Dir, p)
		dst := filepath.Join(c.dir(id), rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if rel == verifiedName || strings.Contains(rel, ".tmp-") {
			return nil
		}
		return copyFile(p, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, real
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// damage overwrites n bytes in the middle of the file at p with bytes that
// differ from those there, keeping its size; with keepMtime the
// modification time is set back afterwards, as `touch -r` would.
func damage(t *testing.T, p string, n int, keepMtime bool) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := st.Size()/2 - int64(n)/2
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] ^= 0xa5
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if keepMtime {
		if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	if st2, _ := os.Stat(p); st2.Size() != st.Size() {
		t.Fatalf("damage changed the size of %s", p)
	}
}

// TestCorruptionCaughtOnOpen damages one file of a verified cache entry in
// place (same size) and checks that Open refuses the entry with an error
// naming the file, and that Ensure re-converts corrupt weights from the
// verified sources, or names a corrupt source it cannot fetch again.
func TestCorruptionCaughtOnOpen(t *testing.T) {
	tests := []struct {
		name      string
		id        string
		file      string // relative to the entry; "" = the converted weights
		n         int
		keepMtime bool
		// repaired: Ensure restores the entry without npm; otherwise it
		// fails naming the file.
		repaired bool
	}{
		{"silero weights", SileroVADv6, "", 4096, false, true},
		{"silero weights, mtime kept", SileroVADv6, "", 4096, true, true},
		{"voices weights", KokoroVoices, "", 1 << 20, false, true},
		{"voice source", KokoroVoices, "src/af_heart.bin", 4096, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.keepMtime && runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
				t.Skip("SKIPPING: no change time read on " + runtime.GOOS)
			}
			c, real := copyEntry(t, tt.id)
			// The first Open hashes every file and records it.
			a, err := c.Open(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			a.Close()
			p := c.weightsPath(tt.id)
			if tt.file != "" {
				p = filepath.Join(c.dir(tt.id), tt.file)
			}
			damage(t, p, tt.n, tt.keepMtime)
			_, err = c.Open(tt.id)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open after damaging %s: %v, want an error wrapping ErrCorrupt that names it", p, err)
			}
			if name, ok := strings.CutPrefix(tt.file, "src/"); ok {
				if _, err := c.SourcePath(tt.id, name); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) {
					t.Errorf("SourcePath of a damaged source: %v, want ErrCorrupt naming it", err)
				}
			}
			// No re-fetch: the repair must come from the sources alone.
			t.Setenv("PATH", t.TempDir())
			err = c.Ensure(context.Background(), tt.id)
			if !tt.repaired {
				if !errors.Is(err, ErrCorrupt) || !errors.Is(err, fetch.ErrNoNpm) || !strings.Contains(err.Error(), p) {
					t.Fatalf("Ensure over a corrupt source without npm: %v, want ErrCorrupt and ErrNoNpm naming %s", err, p)
				}
				return
			}
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			a, err = c.Open(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			sameTensors(t, a, real)
			sum, err := fetch.FileSHA256(p, nil)
			if err != nil || sum != a.Manifest.WeightsSHA256 {
				t.Errorf("re-converted weights hash %s (%v), manifest %s", sum, err, a.Manifest.WeightsSHA256)
			}
		})
	}
}

// TestVerifyHashesEverything: damage that leaves a file's identity as it
// was when last verified (as bit rot would) passes Open, which trusts the
// record and reads nothing; Verify hashes every file regardless, finds it
// and re-converts.
func TestVerifyHashesEverything(t *testing.T) {
	c, real := copyEntry(t, SileroVADv6)
	a, err := c.Open(SileroVADv6)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	p := c.weightsPath(SileroVADv6)
	damage(t, p, 4096, false)
	// Record the damaged file as verified, as if it rotted afterwards.
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Base(p)
	rec := c.readVerified(SileroVADv6)
	v := rec.Files[rel]
	v.fileID = identify(st)
	if err := c.updateVerified(SileroVADv6, map[string]*verifiedFile{rel: &v}); err != nil {
		t.Fatal(err)
	}
	a, err = c.Open(SileroVADv6)
	if err != nil {
		t.Fatalf("Open with an unchanged identity hashed the weights: %v", err)
	}
	a.Close()
	found, err := c.Verify(context.Background(), SileroVADv6)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || !errors.Is(found[0], ErrCorrupt) || !strings.Contains(found[0].Error(), p) {
		t.Errorf("Verify found %v, want %s corrupt", found, p)
	}
	// Nothing else is found the second time.
	if found, err := c.Verify(context.Background(), SileroVADv6); err != nil || len(found) != 0 {
		t.Errorf("second Verify: %v, %v", found, err)
	}
	a, err = c.Open(SileroVADv6)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sameTensors(t, a, real)
}

// TestEnsureRemovesStaleTemporaries: the npm folders and half-written files
// that a killed fetch or conversion leaves are removed by the next one,
// under the cache lock; a record being written by an opener is not.
func TestEnsureRemovesStaleTemporaries(t *testing.T) {
	c, _ := copyEntry(t, SileroVADv6)
	npm := filepath.Join(c.Root, ".npm-123456")
	stale := []string{
		filepath.Join(npm, "vad-web-0.0.31.tgz"),
		filepath.Join(c.dir(SileroVADv6), ".silero-vad-v6.safetensors.tmp-42"),
		filepath.Join(c.dir(SileroVADv6), "src", ".silero_vad.onnx.tmp-7"),
	}
	young := filepath.Join(c.dir(SileroVADv6), "."+verifiedName+".tmp-9")
	for _, p := range append(stale, young) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 1024), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// An interrupted run: the manifest was never written.
	if err := os.Remove(c.manifestPath(SileroVADv6)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := c.Ensure(context.Background(), SileroVADv6); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(stale, npm) {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a fresh record temporary was removed: %v", err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(young, old, old)
	os.Remove(c.manifestPath(SileroVADv6))
	if err := c.Ensure(context.Background(), SileroVADv6); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(young); !os.IsNotExist(err) {
		t.Errorf("an hour-old record temporary was kept (%v)", err)
	}
}
