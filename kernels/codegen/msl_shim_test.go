package codegen_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/codegen/mslshim"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// harness returns the extern "C" entry point fg_run_<name>(bufs, params,
// n) that runs the kernel of s over the shim: an elementwise or per-thread
// reduction kernel as n threads of one grid, a block reduction as n
// threadgroups of ReduceThreads fibers each.
func harness(s source) string {
	d := codegen.MSL
	var b strings.Builder
	switch s.step.Op {
	case kernels.OpFused:
		f, _ := codegen.LowerFused(s.step)
		var args []string
		for i, o := range f.Kernel.Operands {
			c := ""
			if i > 0 {
				c = "const "
			}
			args = append(args, fmt.Sprintf("(%s%s*)bufs[%d]", c, d.TypeName(o.Elem), i))
		}
		fmt.Fprintf(&b, "extern \"C\" int fg_run_%[1]s(void** bufs, const void* params, unsigned n) {\n"+
			"  for (unsigned t = 0; t < n; t++) %[1]s(%[2]s, *(const %[1]s_params*)params, t, n);\n  return 0;\n}\n",
			s.name, strings.Join(args, ", "))
	case kernels.OpReduce:
		r, _ := codegen.LowerReduce(s.step, d)
		k := r.Kernel
		if k.PerThread {
			fmt.Fprintf(&b, "extern \"C\" int fg_run_%[1]s(void** bufs, const void* params, unsigned n) {\n"+
				"  for (unsigned t = 0; t < n; t++) %[1]s((%[2]s*)bufs[0], (const %[3]s*)bufs[1], *(const %[1]s_params*)params, t, n);\n  return 0;\n}\n",
				s.name, d.TypeName(k.Out.Elem), d.TypeName(k.In.Elem))
			break
		}
		fmt.Fprintf(&b, `struct fg_ctx_%[1]s { void** bufs; const void* params; unsigned group, ngroups; };
static void fg_body_%[1]s(void* a, unsigned tid) {
  fg_ctx_%[1]s* c = (fg_ctx_%[1]s*)a;
  %[1]s((%[2]s*)c->bufs[0], (const %[3]s*)c->bufs[1], *(const %[1]s_params*)c->params, tid, c->group, c->ngroups);
}
extern "C" int fg_run_%[1]s(void** bufs, const void* params, unsigned n) {
  for (unsigned g = 0; g < n; g++) {
    fg_ctx_%[1]s c = {bufs, params, g, n};
    if (fgshim::run_group(%[4]d, fg_body_%[1]s, &c) != 0) return -1;
  }
  return 0;
}
`, s.name, d.TypeName(k.Out.Elem), d.TypeName(k.In.Elem), codegen.ReduceThreads)
	}
	return b.String()
}

// shimBackend runs fused and reduction steps as generated MSL compiled by
// clang against the shim, on kernels/cpu's host buffers: a Metal backend
// as far as Linux can have one.
type shimBackend struct {
	*cpu.Backend
	libs map[string]*mslshim.Library // kernel name → the library holding it
}

func (b *shimBackend) Name() string { return "msl-shim" }

func (b *shimBackend) Supports(s *kernels.Step) bool {
	name, err := kernelName(s)
	return err == nil && b.libs[name] != nil
}

func kernelName(s *kernels.Step) (string, error) {
	switch s.Op {
	case kernels.OpFused:
		f, err := codegen.LowerFused(s)
		if err != nil {
			return "", err
		}
		if _, err := f.Kernel.Source(codegen.MSL); err != nil {
			return "", err
		}
		return f.Kernel.Name, nil
	case kernels.OpReduce:
		r, err := codegen.LowerReduce(s, codegen.MSL)
		if err != nil {
			return "", err
		}
		return r.Kernel.Name, nil
	}
	return "", fmt.Errorf("%w: %s", codegen.ErrUnsupported, s.Op)
}

func (b *shimBackend) NewQueue() (kernels.Queue, error) {
	q, err := b.Backend.NewQueue()
	return shimQueue{Queue: q, b: b}, err
}

type shimQueue struct {
	kernels.Queue
	b *shimBackend
}

// Launch runs the step's kernel to completion (the shim is synchronous).
func (q shimQueue) Launch(ctx context.Context, s *kernels.Step, bufs []kernels.Buffer) error {
	var (
		name   string
		params []byte
		n      int
		err    error
	)
	var views []kernels.View
	switch s.Op {
	case kernels.OpFused:
		var f *codegen.Fused
		if f, err = codegen.LowerFused(s); err != nil {
			return err
		}
		name, params, views = f.Kernel.Name, f.Params(), f.Views
		n = min(f.Len(), 61) // fewer threads than elements: the grid-stride loop runs
	case kernels.OpReduce:
		var r *codegen.Reduction
		if r, err = codegen.LowerReduce(s, codegen.MSL); err != nil {
			return err
		}
		name, params = r.Kernel.Name, r.Params()
		views = append([]kernels.View{s.Out[0]}, s.In...)
		n = min(r.Outputs, 5) // fewer threads or groups than outputs: the loop over outputs runs
	default:
		return fmt.Errorf("msl-shim: %w: %s", codegen.ErrUnsupported, s.Op)
	}
	lib := q.b.libs[name]
	if lib == nil {
		return fmt.Errorf("msl-shim: kernel %s of step %q was not built", name, s.Name)
	}
	if n == 0 {
		return nil
	}
	// Buffer pointers at element 0 of each operand's buffer: the kernels
	// index with the views' offsets.
	ptrs := make([]unsafe.Pointer, len(views))
	for i, v := range views {
		host, ok := q.b.HostBytes(bufs[v.Slot])
		if !ok || len(host) == 0 {
			return fmt.Errorf("msl-shim: operand %d has no host memory", i)
		}
		ptrs[i] = unsafe.Pointer(&host[0])
	}
	rc, err := lib.Call("fg_run_"+name, uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&params[0])), uintptr(n))
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(params)
	runtime.KeepAlive(bufs)
	if err != nil {
		return err
	}
	if rc != 0 {
		return fmt.Errorf("msl-shim: kernel %s: threads of a threadgroup reached different barriers", name)
	}
	return nil
}

// buildShim compiles srcs (with their harnesses) into libraries of about
// 60 kernels each, two clang processes at a time, and maps each kernel to
// its library.
func buildShim(t *testing.T, srcs []source) map[string]*mslshim.Library {
	t.Helper()
	batches := batch(srcs, 60)
	libs := make([]*mslshim.Library, len(batches))
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, bt := range batches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var sb strings.Builder
			for _, s := range bt {
				sb.WriteString(s.text)
				sb.WriteString(harness(s))
			}
			dir := t.TempDir()
			path := filepath.Join(dir, fmt.Sprintf("batch%d.so", i))
			if errs[i] = mslshim.Build(context.Background(), dir, sb.String(), path); errs[i] == nil {
				libs[i], errs[i] = mslshim.Open(path)
			}
		}()
	}
	wg.Wait()
	out := map[string]*mslshim.Library{}
	for i, bt := range batches {
		if errs[i] != nil {
			t.Fatalf("batch %d: %v", i, errs[i])
		}
		for _, s := range bt {
			out[s.name] = libs[i]
		}
	}
	return out
}

func requireClang(t *testing.T) {
	t.Helper()
	if _, err := mslshim.Clang(); err != nil {
		missing(t, "generated MSL is NOT compile-checked or run: %v", err)
	}
}

// TestMSLCompiles compiles every MSL kernel the generator produces for the
// seeded random set (every EOp and dtype, ranks 0..6, every reduction)
// with clang against the shim; TestMSLConformance compiles the kit's.
func TestMSLCompiles(t *testing.T) {
	requireClang(t)
	steps := generatorSteps()
	srcs, wide := sources(t, codegen.MSL, steps)
	buildShim(t, srcs)
	t.Logf("clang compiled %d distinct MSL kernels from %d steps (%d Wide steps have no MSL: Metal has no double)", len(srcs), len(steps), wide)
}

// TestMSLConformance runs the conformance kit's fused and reduction cases
// on the generated MSL, executed on the CPU through the shim, against
// kernels/cpu.
func TestMSLConformance(t *testing.T) {
	requireClang(t)
	steps := kitSteps(t)
	srcs, wide := sources(t, codegen.MSL, steps)
	b := &shimBackend{Backend: cpu.New(), libs: buildShim(t, srcs)}
	perThread, block := 0, 0
	for _, s := range srcs {
		if s.step.Op == kernels.OpReduce {
			if r, _ := codegen.LowerReduce(s.step, codegen.MSL); r.Kernel.PerThread {
				perThread++
			} else {
				block++
			}
		}
	}
	if perThread == 0 || block == 0 {
		t.Errorf("the kit's reductions give %d per-thread and %d block kernels: both must run", perThread, block)
	}
	t.Logf("clang compiled %d distinct MSL kernels (%d per-thread and %d block reductions) from the kit's %d fused and reduction steps (%d Wide steps have no MSL)",
		len(srcs), perThread, block, len(steps), wide)
	kerneltest.Check(t, b, kerneltest.Only(kernels.OpFused, kernels.OpReduce))
}

// TestMSLReductionSeeds runs the kit's reductions of four more seeds on
// the shim: each seed has only a few reductions large enough for the
// block-per-output kernels, and their tree and barriers need more cases.
func TestMSLReductionSeeds(t *testing.T) {
	requireClang(t)
	var opts [][]kerneltest.Option
	var steps []*kernels.Step
	for seed := uint64(2); seed <= 5; seed++ {
		o := []kerneltest.Option{kerneltest.Seed(seed), kerneltest.Only(kernels.OpReduce)}
		opts = append(opts, o)
		steps = append(steps, kitSteps(t, o...)...)
	}
	srcs, _ := sources(t, codegen.MSL, steps)
	b := &shimBackend{Backend: cpu.New(), libs: buildShim(t, srcs)}
	for _, o := range opts {
		kerneltest.Check(t, b, o...)
	}
}
