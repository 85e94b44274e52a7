//go:build darwin || freebsd || linux || netbsd

package mslshim

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// Library is a shared library from Build, opened for calls. It stays
// loaded for the life of the process.
type Library struct {
	path   string
	handle uintptr
}

// Open loads a library that Build wrote.
func Open(path string) (*Library, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("mslshim: loading %s: %w", path, err)
	}
	return &Library{path: path, handle: h}, nil
}

// Call calls the extern "C" function sym with integer and pointer
// arguments and returns its int result. Pointers into Go memory must stay
// reachable (runtime.KeepAlive) until Call returns.
func (l *Library) Call(sym string, args ...uintptr) (int32, error) {
	fn, err := purego.Dlsym(l.handle, sym)
	if err != nil {
		return 0, fmt.Errorf("mslshim: %s has no %s: %w", l.path, sym, err)
	}
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r), nil
}
