package nvrtc

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrNotFound is wrapped by Open's error when no NVRTC library loads (as is
// the loader's own error, which lists what was tried).
var ErrNotFound = errors.New("libnvrtc not found")

// EnvVar names the environment variable that overrides the library's name
// or path.
const EnvVar = "FORGE_NVRTC"

// CompileError is a compilation that NVRTC rejected; Log is NVRTC's program
// log, which names the line and the problem.
type CompileError struct {
	Name   string // the program's name, as given to Compile
	Result int    // the nvrtcResult code
	Status string // nvrtcGetErrorString of Result
	Log    string
}

// Error reports the program, the status and the log.
func (e *CompileError) Error() string {
	return fmt.Sprintf("nvrtc: compiling %s: %s (%d):\n%s", e.Name, e.Status, e.Result, strings.TrimSpace(e.Log))
}

// ArchOption returns the option that compiles for an architecture: a
// virtual one for PTX (ArchOption("compute_90")), a real one for machine
// code (ArchOption("sm_90")).
func ArchOption(arch string) string { return "--gpu-architecture=" + arch }

// load is the process-wide library: loaded once, on first use, and never
// closed (a documented device handle; NVRTC programs are independent, so
// every caller can share it).
var load = sync.OnceValues(func() (*Library, error) { return Open() })

// Default returns the process-wide library, loading it on first use.
func Default() (*Library, error) { return load() }
