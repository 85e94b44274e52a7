// Package mmap maps whole files read-only into memory, so that weight files of
// hundreds of megabytes are paged in on demand and shared between processes
// instead of being copied onto the Go heap.
package mmap

import (
	"fmt"
	"os"
)

// File is a read-only mapping of a whole file. Data stays valid until Close.
type File struct {
	// Data is the file's content. Writing to it faults.
	Data   []byte
	unmap  func([]byte) error
	closed bool
}

// Open maps the file at path. An empty file maps to empty Data.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return &File{Data: []byte{}}, nil
	}
	if size < 0 || int64(int(size)) != size {
		return nil, fmt.Errorf("mmap %s: size %d does not fit in memory", path, size)
	}
	data, unmap, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return &File{Data: data, unmap: unmap}, nil
}

// Close releases the mapping. Slices of Data must not be used afterwards.
// Closing twice is a no-op.
func (m *File) Close() error {
	if m == nil || m.closed {
		return nil
	}
	m.closed = true
	data := m.Data
	m.Data = nil
	if m.unmap == nil {
		return nil
	}
	if err := m.unmap(data); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}
