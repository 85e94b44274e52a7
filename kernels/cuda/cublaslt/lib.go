package cublaslt

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/tensorforge/forge/kernels/cuda/internal/dl"
)

// ErrNotFound is wrapped by Load's error when no cuBLASLt library can be
// loaded or it lacks an entry point this package needs. Its text starts
// the error: "libcublasLt not found: tried ...".
var ErrNotFound = errors.New("libcublasLt not found")

// EnvLibrary names the environment variable that overrides where cuBLASLt
// is loaded from (a path); when set, nothing else is tried.
const EnvLibrary = "FORGE_CUBLASLT"

// librarySpec is where Load looks: the sonames of CUDA 13, 12 and 11 (the
// newest first: each works with a driver at least as new as its toolkit)
// through the loader, then the toolkit's usual folders.
func librarySpec() dl.Spec {
	triplet, target := "x86_64-linux-gnu", "x86_64-linux"
	if runtime.GOARCH == "arm64" {
		triplet, target = "aarch64-linux-gnu", "sbsa-linux"
	}
	return dl.Spec{
		Env:   EnvLibrary,
		Names: []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"},
		Dirs:  []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/" + target + "/lib", "/usr/lib/" + triplet},
	}
}

// Status is a cublasStatus_t.
//
// A Status is itself an error, so errors.Is(err, cublaslt.StatusNotSupported)
// matches an *Error carrying it.
type Status int32

// cublasStatus_t values (cublas_api.h, CUDA 11.8 header; the same in
// cudarc v0.18.1's bindings of CUDA 11.4-13.0).
const (
	StatusSuccess         Status = 0  // CUBLAS_STATUS_SUCCESS
	StatusNotInitialized  Status = 1  // CUBLAS_STATUS_NOT_INITIALIZED
	StatusAllocFailed     Status = 3  // CUBLAS_STATUS_ALLOC_FAILED
	StatusInvalidValue    Status = 7  // CUBLAS_STATUS_INVALID_VALUE
	StatusArchMismatch    Status = 8  // CUBLAS_STATUS_ARCH_MISMATCH
	StatusMappingError    Status = 11 // CUBLAS_STATUS_MAPPING_ERROR
	StatusExecutionFailed Status = 13 // CUBLAS_STATUS_EXECUTION_FAILED
	StatusInternalError   Status = 14 // CUBLAS_STATUS_INTERNAL_ERROR
	StatusNotSupported    Status = 15 // CUBLAS_STATUS_NOT_SUPPORTED
	StatusLicenseError    Status = 16 // CUBLAS_STATUS_LICENSE_ERROR
)

var statusNames = map[Status]string{
	StatusSuccess:         "CUBLAS_STATUS_SUCCESS",
	StatusNotInitialized:  "CUBLAS_STATUS_NOT_INITIALIZED",
	StatusAllocFailed:     "CUBLAS_STATUS_ALLOC_FAILED",
	StatusInvalidValue:    "CUBLAS_STATUS_INVALID_VALUE",
	StatusArchMismatch:    "CUBLAS_STATUS_ARCH_MISMATCH",
	StatusMappingError:    "CUBLAS_STATUS_MAPPING_ERROR",
	StatusExecutionFailed: "CUBLAS_STATUS_EXECUTION_FAILED",
	StatusInternalError:   "CUBLAS_STATUS_INTERNAL_ERROR",
	StatusNotSupported:    "CUBLAS_STATUS_NOT_SUPPORTED",
	StatusLicenseError:    "CUBLAS_STATUS_LICENSE_ERROR",
}

// Name returns the status's cublas_api.h name, or "cublasStatus_t(N)".
func (s Status) Name() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "cublasStatus_t(" + strconv.Itoa(int(s)) + ")"
}

// Error returns the status's name.
func (s Status) Error() string { return s.Name() }

// Error is a failed cuBLASLt call.
type Error struct {
	// Call is the entry point that failed ("cublasLtMatmul").
	Call string
	// Status is what it returned.
	Status Status
	// Msg is cublasLtGetStatusString's description, or what this package
	// adds (the problem a heuristic found no algorithm for).
	Msg string
}

// Error formats as "call: NAME (code): message".
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Status.Name(), int32(e.Status))
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Unwrap returns the status.
func (e *Error) Unwrap() error { return e.Status }

// proc is one bound entry point.
type proc struct {
	addr uintptr
	name string
	l    *Lib
}

// Lib is the loaded cuBLASLt library.
type Lib struct {
	// Path is the file it was loaded from.
	Path    string
	version int

	create, destroy                                 proc
	descCreate, descSetAttribute, descDestroy       proc
	layoutCreate, layoutSetAttribute, layoutDestroy proc
	prefCreate, prefSetAttribute, prefDestroy       proc
	algoGetHeuristic, matmul                        proc
	getVersion, getStatusString                     proc
}

// symbols lists the entry points (cublasLt.h; unversioned in CUDA 11-13).
func (l *Lib) symbols() map[string]*proc {
	return map[string]*proc{
		"cublasLtCreate":                       &l.create,
		"cublasLtDestroy":                      &l.destroy,
		"cublasLtMatmulDescCreate":             &l.descCreate,
		"cublasLtMatmulDescSetAttribute":       &l.descSetAttribute,
		"cublasLtMatmulDescDestroy":            &l.descDestroy,
		"cublasLtMatrixLayoutCreate":           &l.layoutCreate,
		"cublasLtMatrixLayoutSetAttribute":     &l.layoutSetAttribute,
		"cublasLtMatrixLayoutDestroy":          &l.layoutDestroy,
		"cublasLtMatmulPreferenceCreate":       &l.prefCreate,
		"cublasLtMatmulPreferenceSetAttribute": &l.prefSetAttribute,
		"cublasLtMatmulPreferenceDestroy":      &l.prefDestroy,
		"cublasLtMatmulAlgoGetHeuristic":       &l.algoGetHeuristic,
		"cublasLtMatmul":                       &l.matmul,
		"cublasLtGetVersion":                   &l.getVersion,
		"cublasLtGetStatusString":              &l.getStatusString,
	}
}

// process is the library as loaded by Load: a documented process-wide
// handle, like the driver's.
var process struct {
	once sync.Once
	l    *Lib
	err  error
}

// Load opens cuBLASLt (see EnvLibrary and librarySpec for where) and binds
// its entry points. It needs neither a driver nor a device; it runs once
// per process and later calls return the first result. Errors wrap
// ErrNotFound.
func Load() (*Lib, error) {
	process.once.Do(func() { process.l, process.err = load(librarySpec()) })
	return process.l, process.err
}

func load(spec dl.Spec) (*Lib, error) {
	lib, err := dl.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	l := &Lib{Path: lib.Path}
	for name, p := range l.symbols() {
		addr, _, err := lib.Sym(name)
		if err != nil {
			return nil, fmt.Errorf("%w: usable library: %w", ErrNotFound, err)
		}
		*p = proc{addr: addr, name: name, l: l}
	}
	v, _, _ := purego.SyscallN(l.getVersion.addr)
	l.version = int(v)
	return l, nil
}

// Version returns cublasLtGetVersion's number (major·10000 + minor·100 +
// patch: 130100 for 13.1.0).
func (l *Lib) Version() int { return l.version }

// StatusString returns cuBLASLt's description of s.
func (l *Lib) StatusString(s Status) string {
	r, _, _ := purego.SyscallN(l.getStatusString.addr, uintptr(s))
	if r == 0 {
		return ""
	}
	// A static C string in the library (never Go memory): read it in place.
	return goString(*(**byte)(unsafe.Pointer(&r)))
}

// call runs one entry point and turns a failed status into an *Error.
// Pointers converted to uintptr in its argument list stay valid (and on
// the heap) for the duration of the call.
//
//go:uintptrescapes
func call(p *proc, args ...uintptr) error {
	r, _, _ := purego.SyscallN(p.addr, args...)
	if s := Status(int32(uint32(r))); s != StatusSuccess {
		return &Error{Call: p.name, Status: s, Msg: p.l.StatusString(s)}
	}
	return nil
}

// goString copies a NUL-terminated C string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
