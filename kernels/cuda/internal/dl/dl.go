// Package dl finds and opens the NVIDIA shared libraries the CUDA packages
// bind through purego (no cgo): the driver API, cuBLASLt and NVRTC.
//
// Each library is looked for in one order: the file an override variable
// names (alone, so that a wrong override fails instead of silently loading
// another copy), else the sonames in order of preference through the
// dynamic loader (LD_LIBRARY_PATH, the ld.so cache, the default folders),
// else the same sonames in the folders where NVIDIA's containers and
// toolkits put them but the loader is often not told about.
package dl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is wrapped by Open's error when no candidate could be loaded.
var ErrNotFound = errors.New("shared library not found")

// notFound is Open's error: what was tried and why each failed.
type notFound struct{ how, reasons string }

func (e *notFound) Error() string {
	if e.reasons == "" {
		return e.how + " (none exists)"
	}
	return e.how + ": " + e.reasons
}
func (e *notFound) Unwrap() error { return ErrNotFound }

// Spec says where to look for one library.
type Spec struct {
	// Env is the override variable; when set, its value is the only
	// candidate.
	Env string
	// Names are sonames in order of preference, tried through the loader.
	Names []string
	// Dirs are folders tried with each name after the loader's own search.
	Dirs []string
}

// Candidates returns the paths Open tries for s, in order, reading the
// override from getenv (os.Getenv in Open; a stub in tests).
func (s Spec) Candidates(getenv func(string) string) []string {
	if s.Env != "" {
		if p := getenv(s.Env); p != "" {
			return []string{p}
		}
	}
	out := append([]string(nil), s.Names...)
	for _, d := range s.Dirs {
		for _, n := range s.Names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// Library is an opened shared library. It stays loaded for the life of the
// process: the bound functions may be called until the process exits.
type Library struct {
	// Path is the candidate that loaded.
	Path   string
	handle uintptr
}

// Open loads the first loadable candidate of s. The error for none names
// every candidate tried (or the override) and the loader's reasons, and
// wraps ErrNotFound; callers put the library's name in front of it
// ("libcuda.so.1 not found: tried ...").
func Open(s Spec) (*Library, error) {
	cands := s.Candidates(os.Getenv)
	var reasons []string
	for _, c := range cands {
		h, err := dlopen(c)
		if err == nil {
			return &Library{Path: c, handle: h}, nil
		}
		// A candidate that is simply absent says nothing the list of
		// candidates does not; a present one that fails to load does.
		if !strings.Contains(err.Error(), "No such file or directory") {
			reasons = append(reasons, err.Error())
		}
	}
	how := "tried " + strings.Join(cands, ", ")
	if s.Env != "" && len(cands) == 1 && os.Getenv(s.Env) != "" {
		how = fmt.Sprintf("%s=%s", s.Env, cands[0])
	}
	return nil, &notFound{how: how, reasons: strings.Join(reasons, "; ")}
}

// Sym returns the address of the first of names that the library exports,
// and which name it was. More than one name lets a binding prefer a newer
// versioned entry point (cuEventElapsedTime_v2) and fall back to the
// older one where both have the same signature.
func (l *Library) Sym(names ...string) (addr uintptr, name string, err error) {
	for _, n := range names {
		if a, err := dlsym(l.handle, n); err == nil && a != 0 {
			return a, n, nil
		}
	}
	return 0, "", fmt.Errorf("%s exports none of %s", l.Path, strings.Join(names, ", "))
}
