package nvrtc

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/tensorforge/forge/kernels/cuda/internal/dl"
)

// Library is a loaded NVRTC. Its methods are safe for concurrent use: each
// compilation is its own NVRTC program.
type Library struct {
	path         string
	major, minor int

	version       func(major, minor *int32) int32
	errorString   func(result int32) uintptr
	createProgram func(prog *uintptr, src, name string, numHeaders int32, headers, includeNames unsafe.Pointer) int32
	compile       func(prog uintptr, numOptions int32, options unsafe.Pointer) int32
	destroy       func(prog *uintptr) int32
	ptxSize       func(prog uintptr, size *uintptr) int32
	ptx           func(prog uintptr, buf *byte) int32
	logSize       func(prog uintptr, size *uintptr) int32
	log           func(prog uintptr, buf *byte) int32
	// cubinSize and cubin are nil where NVRTC predates them (11.1).
	cubinSize func(prog uintptr, size *uintptr) int32
	cubin     func(prog uintptr, buf *byte) int32
}

// librarySpec says where NVRTC is looked for (see the package
// documentation).
func librarySpec() dl.Spec {
	dirs := []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}
	if runtime.GOARCH == "arm64" {
		dirs = []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/sbsa-linux/lib"}
	}
	return dl.Spec{Env: EnvVar, Names: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}, Dirs: dirs}
}

// Open loads NVRTC: $FORGE_NVRTC if set, else the first of the usual names
// that loads. The error lists what was tried and why each failed.
func Open() (*Library, error) { return open(librarySpec()) }

// OpenPath loads NVRTC from one file name or path.
func OpenPath(name string) (*Library, error) { return open(dl.Spec{Names: []string{name}}) }

func open(spec dl.Spec) (*Library, error) {
	lib, err := dl.Open(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return bind(lib)
}

// bind resolves the entry points used here and reads the version.
func bind(lib *dl.Library) (*Library, error) {
	l := &Library{path: lib.Path}
	syms := []struct {
		fn  any
		sym string
	}{
		{&l.version, "nvrtcVersion"},
		{&l.errorString, "nvrtcGetErrorString"},
		{&l.createProgram, "nvrtcCreateProgram"},
		{&l.compile, "nvrtcCompileProgram"},
		{&l.destroy, "nvrtcDestroyProgram"},
		{&l.ptxSize, "nvrtcGetPTXSize"},
		{&l.ptx, "nvrtcGetPTX"},
		{&l.logSize, "nvrtcGetProgramLogSize"},
		{&l.log, "nvrtcGetProgramLog"},
	}
	for _, s := range syms {
		addr, _, err := lib.Sym(s.sym)
		if err != nil {
			return nil, fmt.Errorf("nvrtc: %w", err)
		}
		purego.RegisterFunc(s.fn, addr)
	}
	// Machine code straight from NVRTC is optional: without it callers
	// compile to PTX and leave the last step to the driver.
	if size, _, err := lib.Sym("nvrtcGetCUBINSize"); err == nil {
		if code, _, err := lib.Sym("nvrtcGetCUBIN"); err == nil {
			purego.RegisterFunc(&l.cubinSize, size)
			purego.RegisterFunc(&l.cubin, code)
		}
	}
	var maj, mnr int32
	if r := l.version(&maj, &mnr); r != 0 {
		return nil, fmt.Errorf("nvrtc: %s: nvrtcVersion: %s", lib.Path, l.status(r))
	}
	l.major, l.minor = int(maj), int(mnr)
	return l, nil
}

// Path returns the name or path the library was loaded from.
func (l *Library) Path() string { return l.path }

// Version returns NVRTC's version (e.g. 11, 8).
func (l *Library) Version() (major, minor int) { return l.major, l.minor }

// status spells an nvrtcResult.
func (l *Library) status(r int32) string {
	p := l.errorString(r)
	if p == 0 {
		return fmt.Sprintf("nvrtcResult %d", r)
	}
	return cString(p)
}

// cString copies a NUL-terminated C string.
func cString(p uintptr) string {
	var b []byte
	for i := uintptr(0); ; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+i)) //nolint:govet // C memory owned by NVRTC
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

// Compile compiles one CUDA C++ source (name is what the log calls it) with
// NVRTC options such as ArchOption("compute_90"), and returns the PTX and
// the program log (warnings; empty when there are none). A rejected source
// gives a *CompileError carrying the log.
func (l *Library) Compile(src, name string, options ...string) (ptx []byte, log string, err error) {
	ptx, log, err = l.build(src, name, options, "PTX", l.ptxSize, l.ptx)
	// The PTX is NUL-terminated; keep the text only.
	for len(ptx) > 0 && ptx[len(ptx)-1] == 0 {
		ptx = ptx[:len(ptx)-1]
	}
	return ptx, log, err
}

// CanCompileBinary reports whether CompileBinary is available (NVRTC 11.1
// and later).
func (l *Library) CanCompileBinary() bool { return l.cubin != nil }

// CompileBinary is Compile for a real architecture (ArchOption("sm_90")):
// it returns the machine code (a cubin, which the driver loads without
// compiling) instead of PTX.
func (l *Library) CompileBinary(src, name string, options ...string) (cubin []byte, log string, err error) {
	if l.cubin == nil {
		return nil, "", fmt.Errorf("nvrtc: %s (NVRTC %d.%d) cannot return machine code", l.path, l.major, l.minor)
	}
	return l.build(src, name, options, "cubin", l.cubinSize, l.cubin)
}

// build compiles src and copies out one of the program's results (PTX or
// cubin) through its size and copy entry points.
func (l *Library) build(src, name string, options []string, what string, size func(uintptr, *uintptr) int32, get func(uintptr, *byte) int32) (out []byte, log string, err error) {
	var prog uintptr
	if r := l.createProgram(&prog, src, name, 0, nil, nil); r != 0 {
		return nil, "", fmt.Errorf("nvrtc: creating program %s: %s", name, l.status(r))
	}
	defer func() {
		if r := l.destroy(&prog); r != 0 && err == nil {
			err = fmt.Errorf("nvrtc: destroying program %s: %s", name, l.status(r))
		}
	}()
	// NUL-terminated copies of the options and an array of their addresses;
	// both live on the Go heap, which does not move, until KeepAlive.
	bufs := make([][]byte, len(options))
	ptrs := make([]*byte, len(options)+1)
	for i, o := range options {
		bufs[i] = append([]byte(o), 0)
		ptrs[i] = &bufs[i][0]
	}
	r := l.compile(prog, int32(len(options)), unsafe.Pointer(&ptrs[0]))
	runtime.KeepAlive(bufs)
	runtime.KeepAlive(ptrs)
	log, lerr := l.programLog(prog)
	if r != 0 {
		ce := &CompileError{Name: name, Result: int(r), Status: l.status(r), Log: log}
		if lerr != nil {
			return nil, "", errors.Join(ce, lerr)
		}
		return nil, log, ce
	}
	if lerr != nil {
		return nil, "", lerr
	}
	var n uintptr
	if r := size(prog, &n); r != 0 {
		return nil, log, fmt.Errorf("nvrtc: %s size of %s: %s", what, name, l.status(r))
	}
	buf := make([]byte, n)
	if n > 0 {
		if r := get(prog, &buf[0]); r != 0 {
			return nil, log, fmt.Errorf("nvrtc: %s of %s: %s", what, name, l.status(r))
		}
	}
	return buf, log, nil
}

// programLog returns the program's log without its terminating NUL.
func (l *Library) programLog(prog uintptr) (string, error) {
	var n uintptr
	if r := l.logSize(prog, &n); r != 0 {
		return "", fmt.Errorf("nvrtc: log size: %s", l.status(r))
	}
	if n <= 1 {
		return "", nil
	}
	buf := make([]byte, n)
	if r := l.log(prog, &buf[0]); r != 0 {
		return "", fmt.Errorf("nvrtc: log: %s", l.status(r))
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}
