//go:build unix

package mmap

import (
	"fmt"
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
	// package filepages): they stay in the page cache. The id changes
	// whenever the file does, so what a backend derives from these bytes
	// and keeps on disk is never taken for another version's.
	filepages.Add(data, fileID(f))
	unmap := func(b []byte) error {
		filepages.Remove(b)
		return syscall.Munmap(b)
	}
	return data, unmap, nil
}

// fileID names f's contents as mapped: path, size, modification time,
// device and inode (a file replaced by rename gets a new inode); "" when
// f cannot be stat'ed.
func fileID(f *os.File) string {
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	id := fmt.Sprintf("%s\x00%d\x00%d", f.Name(), st.Size(), st.ModTime().UnixNano())
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		id += fmt.Sprintf("\x00%d\x00%d", s.Dev, s.Ino)
	}
	return id
}
