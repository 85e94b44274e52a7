package metal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen/mslshim"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// requireClang skips loudly without clang, and fails under CI, which
// installs it.
func requireClang(t *testing.T) {
	t.Helper()
	if _, err := mslshim.Clang(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs clang, but: %v", err)
		}
		t.Skipf("SKIPPING: the Metal kernels are NOT compile-checked or run: %v", err)
	}
}

// fixedOpList is the ops with a hand-written kernel, in a stable order.
func fixedOpList() []kernels.Op {
	var ops []kernels.Op
	for op := range fixedOps {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// fixedHarness is C++ appended to kernels.metal for the shim: for every
// hand-written kernel an extern "C" fg_run_<name>(bufs, params, ngroups)
// that runs ngroups threadgroups of fixedThreads fibers, calling the
// kernel with its buffers cast from the table (the kernels' common shape
// makes one template do it).
func fixedHarness() string {
	var b strings.Builder
	b.WriteString(`
#include <utility>
struct fg_ctx { void** bufs; const void* params; unsigned group, ngroups; };
template <class P, class... B, size_t... I>
static void fg_call(void (*k)(const P&, uint, uint, uint, B...), const fg_ctx* c, unsigned tid, std::index_sequence<I...>) {
  k(*(const P*)c->params, tid, c->group, c->ngroups, (B)c->bufs[I]...);
}
template <class P, class... B>
static void fg_call(void (*k)(const P&, uint, uint, uint, B...), const fg_ctx* c, unsigned tid) {
  fg_call(k, c, tid, std::index_sequence_for<B...>{});
}
`)
	for _, op := range fixedOpList() {
		fmt.Fprintf(&b, `static void fg_body_fk_%[1]s(void* a, unsigned tid) { fg_call(fk_%[1]s, (const fg_ctx*)a, tid); }
extern "C" int fg_run_fk_%[1]s(void** bufs, const void* params, unsigned ngroups) {
  for (unsigned g = 0; g < ngroups; g++) {
    fg_ctx c = {bufs, params, g, ngroups};
    if (fgshim::run_group(%[2]d, fg_body_fk_%[1]s, &c) != 0) return -1;
  }
  return 0;
}
`, op, fixedThreads)
	}
	return b.String()
}

// buildFixed compiles kernels.metal with its harness against the shim.
func buildFixed(t *testing.T) *mslshim.Library {
	t.Helper()
	requireClang(t)
	dir := t.TempDir()
	lib := filepath.Join(dir, "fixed.so")
	if err := mslshim.Build(context.Background(), dir, fixedSource+fixedHarness(), lib); err != nil {
		t.Fatal(err)
	}
	l, err := mslshim.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// shimBackend runs the hand-written kernels as the Metal backend launches
// them (prepare: the same parameter blocks, buffer bindings and grids),
// compiled by clang against the shim and run on the CPU over kernels/cpu's
// host buffers; it declines everything else.
type shimBackend struct {
	*cpu.Backend
	lib *mslshim.Library
}

func (b *shimBackend) Name() string { return "metal-shim" }

func (b *shimBackend) Supports(s *kernels.Step) bool {
	_, fixed := fixedOps[s.Op]
	return fixed && supports(s)
}

func (b *shimBackend) NewQueue() (kernels.Queue, error) {
	q, err := b.Backend.NewQueue()
	return shimQueue{Queue: q, b: b}, err
}

type shimQueue struct {
	kernels.Queue
	b *shimBackend
}

// shimGroups caps the threadgroups run on the shim, so the kernels' loops
// over their work (group += ngroups) run more than once.
const shimGroups = 3

func (q shimQueue) Launch(ctx context.Context, s *kernels.Step, bufs []kernels.Buffer) error {
	l, err := prepare(s)
	if errors.Is(err, errEmpty) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.src != "" || l.groups == 0 || l.firstBuf != 1 || l.paramIx != 0 || l.group != fixedThreads {
		return fmt.Errorf("launch of %s is not a hand-written kernel's: %+v", l.fn, l)
	}
	var scratch [8]byte
	ptrs := make([]unsafe.Pointer, len(l.slots))
	for i, slot := range l.slots {
		host, ok := q.b.HostBytes(bufs[slot])
		if !ok {
			return fmt.Errorf("slot %d has no host memory", slot)
		}
		ptrs[i] = unsafe.Pointer(&scratch[0])
		if len(host) > 0 {
			ptrs[i] = unsafe.Pointer(&host[0])
		}
	}
	rc, err := q.b.lib.Call("fg_run_"+l.fn, uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&l.params[0])), uintptr(min(l.groups, shimGroups)))
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(bufs)
	runtime.KeepAlive(l)
	if err != nil {
		return err
	}
	if rc != 0 {
		return fmt.Errorf("%s: threads of a threadgroup reached different barriers", l.fn)
	}
	return nil
}

// TestFixedKernelsOnShim runs the conformance kit's cases of every op
// with a hand-written kernel on kernels.metal compiled by clang against
// the shim and run on the CPU, launched exactly as the backend launches
// them, against kernels/cpu.
func TestFixedKernelsOnShim(t *testing.T) {
	b := &shimBackend{Backend: cpu.New(), lib: buildFixed(t)}
	kerneltest.Check(t, b, kerneltest.Only(fixedOpList()...))
}

// TestFixedKernelsDeclared: every op of the launch table has its kernel
// in kernels.metal, with the shape the launches assume.
func TestFixedKernelsDeclared(t *testing.T) {
	for _, op := range fixedOpList() {
		name := "fk_" + op.String()
		for _, want := range []string{"kernel void " + name + "(", "constant " + name + "_params& p [[buffer(0)]]", "struct " + name + "_params {"} {
			if !strings.Contains(fixedSource, want) {
				t.Errorf("kernels.metal lacks %q", want)
			}
		}
	}
	if !strings.Contains(fixedSource, fmt.Sprintf("#define FK_THREADS %d\n", fixedThreads)) {
		t.Errorf("kernels.metal's FK_THREADS is not fixedThreads (%d)", fixedThreads)
	}
}
