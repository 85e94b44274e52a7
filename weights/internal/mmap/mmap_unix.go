//go:build unix

package mmap

import (
	"os"
	"syscall"

	"github.com/tensorforge/forge/internal/filepages"
)

func mapFile(f *os.File, size int) ([]byte, func([]byte) error, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	// A backend that packs a weight may drop the pages it read (see
	// package filepages): they stay in the page cache.
	filepages.Add(data)
	unmap := func(b []byte) error {
		filepages.Remove(b)
		return syscall.Munmap(b)
	}
	return data, unmap, nil
}
