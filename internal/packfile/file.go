package packfile

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/tensorforge/forge/internal/outfile"
)

// KeySum condenses a file key (everything the blobs were derived from and
// with: the source file's identity, the code's version, the CPU path) into
// the bytes a header carries.
func KeySum(key string) [24]byte {
	s := sha256.Sum256([]byte(key))
	return [24]byte(s[:24])
}

// File is an opened pack file: its blobs are read in place from a
// read-only mapping until Close. It is safe for concurrent use.
type File struct {
	ix    *index
	unmap func() error
}

// Open maps the file at path and checks its header and index against
// key (see KeySum). A missing, damaged or foreign file is an error; the
// caller then derives its blobs again.
func Open(path string, key [24]byte) (*File, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("packfile: %w", err)
	}
	ix, err := parse(data, key)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return &File{ix: ix, unmap: unmap}, nil
}

// Get returns the blob named key, read-only and in place, or false when
// the file has none or its bytes do not match their checksum (checked on
// the first Get of each blob). The bytes stay valid until Close.
func (f *File) Get(key string) ([]byte, bool) { return f.ix.get(key) }

// Keys lists the file's blobs in file order.
func (f *File) Keys() []string { return f.ix.keys }

// Close unmaps the file; no blob of it may be used afterwards.
func (f *File) Close() error {
	if f == nil || f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.ix = nil, nil
	return err
}

// Writer writes a pack file: blobs one by one, then Commit. A Writer is
// not safe for concurrent use.
type Writer struct {
	f    *outfile.File
	key  [24]byte
	off  uint64
	idx  []byte
	n    uint32
	seen map[string]bool
	err  error
}

// Create starts writing the pack file path for key; path holds its old
// content (or nothing) until Commit.
func Create(path string, key [24]byte) (*Writer, error) {
	f, err := outfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("packfile: %w", err)
	}
	w := &Writer{f: f, key: key, off: headerSize, seen: map[string]bool{}}
	if _, err := f.Write(make([]byte, headerSize)); err != nil {
		f.Abort()
		return nil, fmt.Errorf("packfile: %w", err)
	}
	return w, nil
}

// Add appends the blob b under key.
func (w *Writer) Add(key string, b []byte) error {
	if w.err != nil {
		return w.err
	}
	if len(key) > maxKey || w.seen[key] {
		return fmt.Errorf("packfile: blob key %q too long or used twice", key)
	}
	pad := (Align - w.off%Align) % Align
	if _, err := w.f.Write(make([]byte, pad)); err != nil {
		w.err = fmt.Errorf("packfile: %w", err)
		return w.err
	}
	w.off += pad
	if _, err := w.f.Write(b); err != nil {
		w.err = fmt.Errorf("packfile: %w", err)
		return w.err
	}
	w.seen[key] = true
	w.idx = binary.LittleEndian.AppendUint32(w.idx, uint32(len(key)))
	w.idx = append(w.idx, key...)
	w.idx = binary.LittleEndian.AppendUint64(w.idx, w.off)
	w.idx = binary.LittleEndian.AppendUint64(w.idx, uint64(len(b)))
	w.idx = binary.LittleEndian.AppendUint32(w.idx, crc32.Checksum(b, castagnoli))
	w.off += uint64(len(b))
	w.n++
	return nil
}

// Commit writes the index and header and renames the file into place.
func (w *Writer) Commit() error {
	if w.err != nil {
		w.f.Abort()
		return w.err
	}
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.LittleEndian.PutUint32(h[8:], Version)
	binary.LittleEndian.PutUint32(h[12:], w.n)
	copy(h[16:40], w.key[:])
	binary.LittleEndian.PutUint64(h[40:], w.off)
	binary.LittleEndian.PutUint64(h[48:], uint64(len(w.idx)))
	binary.LittleEndian.PutUint32(h[56:], crc32.Checksum(w.idx, castagnoli))
	binary.LittleEndian.PutUint32(h[60:], crc32.Checksum(h[:60], castagnoli))
	_, err := w.f.Write(w.idx)
	if err == nil {
		_, err = w.f.Seek(0, 0)
	}
	if err == nil {
		_, err = w.f.Write(h)
	}
	if err != nil {
		w.f.Abort()
		return fmt.Errorf("packfile: %w", err)
	}
	if err := w.f.Commit(); err != nil {
		return fmt.Errorf("packfile: %w", err)
	}
	return nil
}

// Abort drops the file being written; path is left as it was.
func (w *Writer) Abort() { w.f.Abort() }

// errEmpty is Open's error for an empty file, which cannot be mapped.
var errEmpty = errors.New("empty file")
