package driver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/kernels/cuda/internal/dl"
)

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Call: "cuMemAlloc_v2", Code: ErrorOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"},
			"cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{&Error{Call: "cuInit", Code: ErrorNoDevice, Name: ErrorNoDevice.Name()},
			"cuInit: CUDA_ERROR_NO_DEVICE (100)"},
		{&Error{Call: "cuLaunchKernel", Code: 12345, Name: Result(12345).Name()},
			"cuLaunchKernel: CUresult(12345) (12345)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("upload weights: %w", &Error{Call: "cuMemAlloc_v2", Code: ErrorOutOfMemory})
	tests := []struct {
		target error
		want   bool
	}{
		{ErrorOutOfMemory, true},
		{ErrorNotReady, false},
		{Result(2), true},
	}
	for _, tt := range tests {
		if got := errors.Is(err, tt.target); got != tt.want {
			t.Errorf("errors.Is(err, %v) = %v, want %v", tt.target, got, tt.want)
		}
	}
	var e *Error
	if !errors.As(err, &e) || e.Call != "cuMemAlloc_v2" {
		t.Errorf("errors.As found %+v", e)
	}
}

func TestResultName(t *testing.T) {
	tests := []struct {
		r    Result
		want string
	}{
		{Success, "CUDA_SUCCESS"},
		{ErrorNotReady, "CUDA_ERROR_NOT_READY"},
		{ErrorStreamCaptureInvalidated, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
		{-7, "CUresult(-7)"},
	}
	for _, tt := range tests {
		if got := tt.r.Name(); got != tt.want {
			t.Errorf("Result(%d).Name() = %q, want %q", tt.r, got, tt.want)
		}
		if got := tt.r.Error(); got != tt.want {
			t.Errorf("Result(%d).Error() = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestLibrarySearchOrder(t *testing.T) {
	tests := []struct {
		name string
		env  string
		want []string
	}{
		{"loader first, then known folders", "", []string{
			"libcuda.so.1",
			"/usr/local/nvidia/lib64/libcuda.so.1",
			"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
			"/usr/lib64/libcuda.so.1",
			"/usr/lib/wsl/lib/libcuda.so.1",
		}},
		{"override alone", "/opt/drv/libcuda.so.1", []string{"/opt/drv/libcuda.so.1"}},
	}
	spec := librarySpec()
	if spec.Env != "FORGE_LIBCUDA" {
		t.Fatalf("override variable %q, want FORGE_LIBCUDA", spec.Env)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spec.Candidates(func(k string) string {
				if k == "FORGE_LIBCUDA" {
					return tt.env
				}
				return ""
			})
			want := tt.want
			if tt.env == "" && strings.Contains(fmt.Sprint(got), "aarch64") {
				want = append([]string(nil), want...)
				want[2] = "/usr/lib/aarch64-linux-gnu/libcuda.so.1"
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("candidates\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestLoadWithoutDriver(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "libcuda.so.1")
	if err := os.WriteFile(garbage, []byte("not a shared library"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      string
		spec     dl.Spec
		wantHead string
	}{
		{"nothing on the search path", "",
			dl.Spec{Env: "FORGE_TEST_LIBCUDA", Names: []string{"libforge-missing.so.1"}, Dirs: []string{dir}},
			"libcuda.so.1 not found: tried libforge-missing.so.1, " + filepath.Join(dir, "libforge-missing.so.1") + " (none exists)"},
		{"override names a missing file", filepath.Join(dir, "nope.so"),
			dl.Spec{Env: "FORGE_TEST_LIBCUDA", Names: []string{"libcuda.so.1"}},
			"libcuda.so.1 not found: FORGE_TEST_LIBCUDA=" + filepath.Join(dir, "nope.so") + " (none exists)"},
		{"override names a file that is no library", garbage,
			dl.Spec{Env: "FORGE_TEST_LIBCUDA", Names: []string{"libcuda.so.1"}},
			"libcuda.so.1 not found: FORGE_TEST_LIBCUDA=" + garbage + ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("FORGE_TEST_LIBCUDA", tt.env)
			d, err := load(tt.spec)
			if err == nil {
				t.Fatalf("load gave a driver from %s", d.Path)
			}
			if !errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice) {
				t.Errorf("error %v: want ErrNoDriver only", err)
			}
			if !strings.HasPrefix(err.Error(), tt.wantHead) {
				t.Errorf("error\n %q\nwant it to start with\n %q", err, tt.wantHead)
			}
		})
	}
}

func TestArgsPacking(t *testing.T) {
	var a Args
	type want struct {
		bytes []byte
	}
	le := func(v uint64, n int) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, v)
		return b[:n]
	}
	strct := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	// Reset must empty a previous launch's parameters.
	a.U32(99).U32(98)
	a.Reset().
		Ptr(0x7f00_0000_1000).
		U32(7).
		F32(1.5).
		I32(-2).
		I64(-3).
		F64(math.Pi).
		Bytes(strct).
		U64(1 << 40)
	wants := []want{
		{le(0x7f00_0000_1000, 8)},
		{le(7, 4)},
		{le(uint64(math.Float32bits(1.5)), 4)},
		{le(uint64(uint32(0xfffffffe)), 4)},
		{le(uint64(0xfffffffffffffffd), 8)},
		{le(math.Float64bits(math.Pi), 8)},
		{strct},
		{le(1<<40, 8)},
	}
	if a.Len() != len(wants) {
		t.Fatalf("Len = %d, want %d", a.Len(), len(wants))
	}
	for i, w := range wants {
		if got := a.value(i, len(w.bytes)); fmt.Sprint(got) != fmt.Sprint(w.bytes) {
			t.Errorf("parameter %d = % x, want % x", i, got, w.bytes)
		}
		if a.offs[i]%8 != 0 {
			t.Errorf("parameter %d at offset %d, not 8-byte aligned", i, a.offs[i])
		}
	}
	// The kernelParams table points at each value.
	table := a.kernelParams()
	for i, w := range wants {
		p := unsafe.Pointer(&a.vals[0])
		got := unsafe.Slice((*byte)(unsafe.Add(p, table[i]-uintptr(p))), len(w.bytes))
		if fmt.Sprint(got) != fmt.Sprint(w.bytes) {
			t.Errorf("kernelParams[%d] points at % x, want % x", i, got, w.bytes)
		}
	}
}

func TestDim3OrOne(t *testing.T) {
	tests := []struct{ in, want Dim3 }{
		{Dim3{}, Dim3{1, 1, 1}},
		{Dim3{X: 256}, Dim3{256, 1, 1}},
		{Dim3{4, 5, 6}, Dim3{4, 5, 6}},
	}
	for _, tt := range tests {
		if got := tt.in.orOne(); got != tt.want {
			t.Errorf("%v.orOne() = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDeviceInfoText(t *testing.T) {
	i := DeviceInfo{Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0, SMs: 132, TotalMem: 85520809984}
	if got, want := i.Arch(), "sm_90"; got != want {
		t.Errorf("Arch = %q, want %q", got, want)
	}
	if got, want := i.String(), "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.6 GiB)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// TestLaunchConfigLayout: LaunchEarly hands cuLaunchKernelEx a Go struct
// as a CUlaunchConfig and its CUlaunchAttribute; their offsets must be
// cuda.h's on 64-bit platforms.
func TestLaunchConfigLayout(t *testing.T) {
	var c launchConfig
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"sharedMemBytes", unsafe.Offsetof(c.shared), 24},
		{"hStream", unsafe.Offsetof(c.stream), 32},
		{"attrs", unsafe.Offsetof(c.attrs), 40},
		{"numAttrs", unsafe.Offsetof(c.numAttrs), 48},
		{"attribute value", unsafe.Offsetof(c.attr.value), 8},
		{"attribute size", unsafe.Sizeof(c.attr), 72},
	} {
		if f.got != f.want {
			t.Errorf("%s at %d, want %d", f.name, f.got, f.want)
		}
	}
}
