//go:build !(darwin || freebsd || linux || netbsd)

package mslshim

import "errors"

// Library is a shared library from Build; this system cannot load one.
type Library struct{}

// Open fails: purego loads libraries on darwin, freebsd, linux and netbsd.
func Open(path string) (*Library, error) {
	return nil, errors.New("mslshim: loading " + path + ": not supported on this system")
}

// Call fails.
func (l *Library) Call(sym string, args ...uintptr) (int32, error) {
	return 0, errors.New("mslshim: not supported on this system")
}
