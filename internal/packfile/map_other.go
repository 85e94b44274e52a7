//go:build !unix

package packfile

import "os"

// mapFile reads the file where mmap is unavailable.
func mapFile(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(b) == 0 {
		return nil, nil, errEmpty
	}
	return b, func() error { return nil }, nil
}
