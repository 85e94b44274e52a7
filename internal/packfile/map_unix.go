//go:build unix

package packfile

import (
	"fmt"
	"os"
	"syscall"

	"github.com/tensorforge/forge/internal/filepages"
)

// mapFile maps the file at path read-only and shared: its pages are the
// page cache's, shared by every process that maps it.
func mapFile(path string) ([]byte, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, nil, errEmpty
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: %d bytes do not fit in memory", path, size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	// Registered without an identity: a caller may drop the pages of
	// blobs it does not use (filepages.Release), and nothing derives from
	// them.
	filepages.Add(data, "")
	return data, func() error {
		filepages.Remove(data)
		return syscall.Munmap(data)
	}, nil
}
