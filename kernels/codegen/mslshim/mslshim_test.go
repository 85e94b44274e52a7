package mslshim_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/kernels/codegen/mslshim"
)

func requireClang(t *testing.T) {
	t.Helper()
	if _, err := mslshim.Clang(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs clang, but: %v", err)
		}
		t.Skipf("SKIPPING: MSL shim not tested: %v", err)
	}
}

func TestCheck(t *testing.T) {
	requireClang(t)
	cases := []struct {
		name, src, wantErr string
	}{
		{"address spaces and attributes", `#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]], constant float& s [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  threadgroup float t[4];
  t[gid % 4] = precise::exp(s);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = as_type<float>(as_type<uint>(t[0]) | 1u);
}`, ""},
		{"undeclared function", `#include <metal_stdlib>
using namespace metal;
kernel void k(device float* out [[buffer(0)]]) { out[0] = nosuchfn(1.0f); }`, "nosuchfn"},
		{"write through constant", `#include <metal_stdlib>
using namespace metal;
kernel void k(constant float& s [[buffer(0)]]) { s = 1.0f; }`, "const"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mslshim.Check(context.Background(), t.TempDir(), c.src)
			if c.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("error %v, want one mentioning %q", err, c.wantErr)
			}
		})
	}
}

// groupSrc has a block sum whose tree needs every barrier, and a kernel in
// which only some threads reach a barrier.
const groupSrc = `#include <metal_stdlib>
using namespace metal;
kernel void blocksum(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                     uint tid [[thread_position_in_threadgroup]]) {
  threadgroup float sh[64];
  sh[tid] = in[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 32; s > 0; s >>= 1) {
    if (tid < s) sh[tid] += sh[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) out[0] = sh[0];
}
kernel void divergent(uint tid [[thread_position_in_threadgroup]]) {
  if (tid < 3) threadgroup_barrier(mem_flags::mem_threadgroup);
}
struct args { const float* in; float* out; };
static void sum_body(void* a, unsigned tid) { args* p = (args*)a; blocksum(p->in, p->out, tid); }
static void div_body(void*, unsigned tid) { divergent(tid); }
extern "C" int run_sum(const float* in, float* out) { args a = {in, out}; return fgshim::run_group(64, sum_body, &a); }
extern "C" int run_divergent(void) { return fgshim::run_group(8, div_body, nullptr); }
`

func TestRunGroup(t *testing.T) {
	requireClang(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "group.so")
	if err := mslshim.Build(context.Background(), dir, groupSrc, lib); err != nil {
		t.Fatal(err)
	}
	l, err := mslshim.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 64)
	for i := range in {
		in[i] = float32(i)
	}
	out := make([]float32, 1)
	rc, err := l.Call("run_sum", uintptr(unsafe.Pointer(&in[0])), uintptr(unsafe.Pointer(&out[0])))
	runtime.KeepAlive(in)
	runtime.KeepAlive(out)
	if err != nil || rc != 0 || out[0] != 64*63/2 {
		t.Errorf("block sum: rc %d, err %v, got %v, want %v", rc, err, out[0], 64*63/2)
	}
	if rc, err := l.Call("run_divergent"); err != nil || rc != -1 {
		t.Errorf("divergent barriers: rc %d, err %v, want -1", rc, err)
	}
	if _, err := l.Call("no_such_symbol"); err == nil {
		t.Error("calling a missing symbol succeeded")
	}
}
