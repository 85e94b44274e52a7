package nvrtc_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// library returns NVRTC, or skips loudly; under CI (which installs Debian's
// libnvrtc11.2) its absence fails the test.
func library(t *testing.T) *nvrtc.Library {
	t.Helper()
	l, err := nvrtc.Default()
	if err != nil && os.Getenv("CI") != "" {
		t.Fatalf("CI installs libnvrtc11.2, but: %v", err)
	}
	if err != nil {
		t.Skipf("SKIPPING: no NVRTC on this machine, CUDA sources are not compile-checked (%v); on Debian enable the non-free component and apt-get install libnvrtc11.2", err)
	}
	return l
}

func TestCompile(t *testing.T) {
	l := library(t)
	maj, _ := l.Version()
	if maj < 11 {
		t.Fatalf("NVRTC version %d from %s", maj, l.Path())
	}
	cases := []struct {
		name, src string
		wantErr   string // substring of the log; "" for success
		wantPTX   string
	}{
		{"ok", `extern "C" __global__ void twice(float* x, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.0f * x[i];
}`, "", ".entry twice"},
		{"undeclared", `extern "C" __global__ void k(float* x) { x[0] = y; }`, "identifier \"y\" is undefined", ""},
		{"syntax", `extern "C" __global__ void k(float* x) { x[0] = ; }`, "expected an expression", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ptx, _, err := l.Compile(c.src, c.name+".cu", nvrtc.ArchOption("compute_90"))
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(ptx), c.wantPTX) || !strings.Contains(string(ptx), ".target sm_90") {
					t.Fatalf("PTX lacks %q or the target:\n%s", c.wantPTX, ptx)
				}
				return
			}
			var ce *nvrtc.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a CompileError", err)
			}
			if !strings.Contains(ce.Log, c.wantErr) || !strings.Contains(err.Error(), c.name+".cu") {
				t.Fatalf("error %q lacks %q", err, c.wantErr)
			}
		})
	}
}

// TestCompileBinary checks that a real architecture gives machine code: an
// ELF image, which the driver loads without compiling.
func TestCompileBinary(t *testing.T) {
	l := library(t)
	if !l.CanCompileBinary() {
		t.Skipf("SKIPPING: NVRTC %s returns no machine code", l.Path())
	}
	src := `extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }`
	bin, _, err := l.CompileBinary(src, "twice.cu", nvrtc.ArchOption("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bin) < 64 || string(bin[:4]) != "\x7fELF" || !strings.Contains(string(bin), "twice") {
		t.Fatalf("%d bytes, not an ELF image naming the kernel", len(bin))
	}
	if _, _, err := l.CompileBinary(`extern "C" __global__ void k(float* x) { x[0] = y; }`, "bad.cu", nvrtc.ArchOption("sm_90")); err == nil {
		t.Fatal("a bad source compiled")
	}
}

func TestOpenPathMissing(t *testing.T) {
	if _, err := nvrtc.OpenPath("/nonexistent/libnvrtc.so"); err == nil {
		t.Fatal("opening a missing library succeeded")
	}
}
