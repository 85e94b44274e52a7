//go:build !unix

package mmap

import (
	"io"
	"os"
)

// mapFile falls back to reading the file where mmap is unavailable.
func mapFile(f *os.File, size int) ([]byte, func([]byte) error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, err
	}
	return data, nil, nil
}
