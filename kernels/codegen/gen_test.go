package codegen_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

var allDTypes = []kernels.DType{kernels.F32, kernels.F16, kernels.BF16, kernels.I32, kernels.I64, kernels.U8, kernels.I8, kernels.Bool}

var allKinds = []kernels.ReduceKind{kernels.ReduceSum, kernels.ReduceMean, kernels.ReduceMax, kernels.ReduceMin,
	kernels.ReduceProd, kernels.ReduceArgMax, kernels.ReduceArgMin, kernels.ReduceVar}

// randView returns a view of shape in slot with a random layout: dense,
// permuted, stepped, broadcast axes (stride 0), an offset.
func randView(rng *rand.Rand, slot int, dt kernels.DType, shape []int) kernels.View {
	v := kernels.View{Slot: slot, DType: dt, Shape: slices.Clone(shape), Strides: make([]int, len(shape))}
	order := rng.Perm(len(shape))
	if rng.IntN(2) == 0 {
		sort.Ints(order) // row-major half of the time
	}
	st := 1
	for i := len(order) - 1; i >= 0; i-- {
		d := order[i]
		v.Strides[d] = st
		st *= shape[d] * (1 + rng.IntN(2))
	}
	for d := range shape {
		if rng.IntN(4) == 0 {
			v.Strides[d] = 0
		}
	}
	v.Offset = rng.IntN(3)
	return v
}

// randFused returns a random fused step that uses op, over rank dimensions,
// with random input and output dtypes and layouts.
func randFused(rng *rand.Rand, op kernels.EOp, rank int) *kernels.Step {
	shape := make([]int, rank)
	for d := range shape {
		shape[d] = 1 + rng.IntN(4)
	}
	nIn := 1 + rng.IntN(4)
	s := &kernels.Step{Op: kernels.OpFused, Name: "random " + op.String()}
	e := &kernels.Expr{Wide: rng.IntN(4) == 0}
	nregs := 0
	for k := range nIn {
		s.In = append(s.In, randView(rng, 1+k, allDTypes[rng.IntN(len(allDTypes))], shape))
		e.Code = append(e.Code, kernels.Instr{Op: kernels.ELoad, Dst: uint16(nregs), A: uint16(k)})
		nregs++
	}
	n := 1 + rng.IntN(8)
	at := rng.IntN(n)
	for i := range n {
		o := kernels.EOp(1 + rng.IntN(int(kernels.EWhere))) // any op but load
		if i == at {
			o = op
		}
		in := kernels.Instr{Op: o, A: uint16(rng.IntN(nregs)), B: uint16(rng.IntN(nregs)), C: uint16(rng.IntN(nregs)), Imm: rng.NormFloat64() * 3}
		if o == kernels.ELoad {
			in.A = uint16(rng.IntN(nIn))
		}
		if rng.IntN(4) == 0 { // overwrite a register, maybe its own operand
			in.Dst = uint16(rng.IntN(nregs))
		} else {
			in.Dst = uint16(nregs)
			nregs++
		}
		e.Code = append(e.Code, in)
	}
	e.NumRegs = nregs
	e.Result = e.Code[len(e.Code)-1].Dst
	s.Expr = e
	out := randView(rng, 0, allDTypes[rng.IntN(len(allDTypes))], shape)
	for d := range out.Strides { // outputs never broadcast
		if out.Strides[d] == 0 {
			out = dense(0, out.DType, shape...)
			break
		}
	}
	s.Out = []kernels.View{out}
	return s
}

// randReduce returns a random reduction of the given kind and input dtype
// over rank axes of extents up to maxExt (the last one always reduced).
func randReduce(rng *rand.Rand, kind kernels.ReduceKind, dt kernels.DType, rank, maxExt int) *kernels.Step {
	shape := make([]int, rank)
	for d := range shape {
		shape[d] = 1 + rng.IntN(maxExt)
	}
	var axes, oshape []int
	for d := range shape {
		if rng.IntN(2) == 0 || d == rank-1 {
			axes = append(axes, d)
			oshape = append(oshape, 1)
		} else {
			oshape = append(oshape, shape[d])
		}
	}
	odt := dt
	if kind == kernels.ReduceArgMax || kind == kernels.ReduceArgMin {
		odt = kernels.I64
	} else if rng.IntN(3) == 0 {
		odt = allDTypes[rng.IntN(len(allDTypes))]
	}
	return &kernels.Step{Op: kernels.OpReduce, Name: "random reduce",
		In:   []kernels.View{randView(rng, 1, dt, shape)},
		Out:  []kernels.View{dense(0, odt, oshape...)},
		Attr: kernels.ReduceAttr{Kind: kind, Axes: axes, Correction: rng.IntN(2)}}
}

// generatorSteps is the compile checks' seeded random set: every EOp in
// several programs over ranks 0..6 with every input and output dtype
// (Wide a quarter of the time), and every reduction kind over every input
// dtype and ranks 1..5, one thread and one block per output.
func generatorSteps() []*kernels.Step {
	rng := rand.New(rand.NewPCG(12, 13))
	var steps []*kernels.Step
	for rep := range 6 {
		for op := kernels.EOp(0); op <= kernels.EWhere; op++ {
			steps = append(steps, randFused(rng, op, (int(op)+rep)%7))
		}
	}
	for _, k := range allKinds {
		for _, dt := range allDTypes {
			steps = append(steps, randReduce(rng, k, dt, 1+rng.IntN(5), 1+rng.IntN(5)))
			steps = append(steps, randReduce(rng, k, dt, 1+rng.IntN(3), 80)) // a block per output
		}
	}
	return steps
}

// recorder declines every step and remembers the fused and reduction
// steps it was asked about: running the conformance kit against it lists
// the kit's steps without running them.
type recorder struct {
	*cpu.Backend
	steps []*kernels.Step
}

func (r *recorder) Name() string { return "recorder" }

func (r *recorder) Supports(s *kernels.Step) bool {
	if s.Op == kernels.OpFused || s.Op == kernels.OpReduce {
		c := *s
		r.steps = append(r.steps, &c)
	}
	return false
}

// kitSteps returns the conformance kit's fused and reduction steps (for
// the kit's options, e.g. another seed).
func kitSteps(t *testing.T, opts ...kerneltest.Option) []*kernels.Step {
	r := &recorder{Backend: cpu.New()}
	kerneltest.Check(t, r, append([]kerneltest.Option{kerneltest.Only(kernels.OpFused, kernels.OpReduce)}, opts...)...)
	return r.steps
}

// source is one generated kernel.
type source struct {
	name, text string
	step       *kernels.Step
}

// sources lowers and prints every step in d, once per distinct kernel.
// Steps d cannot express (Wide in MSL) are counted in skipped.
func sources(t *testing.T, d codegen.Dialect, steps []*kernels.Step) (out []source, skipped int) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range steps {
		var name, text string
		var err error
		switch s.Op {
		case kernels.OpFused:
			var f *codegen.Fused
			if f, err = codegen.LowerFused(s); err == nil {
				name = f.Kernel.Name
				text, err = f.Kernel.Source(d)
			}
		case kernels.OpReduce:
			var r *codegen.Reduction
			if r, err = codegen.LowerReduce(s, d); err == nil {
				name = r.Kernel.Name
				text, err = r.Kernel.Source(d)
			}
		}
		if err != nil {
			if d == codegen.MSL && s.Expr != nil && s.Expr.Wide {
				skipped++
				continue
			}
			t.Fatalf("%s (%s): %v", s.Name, s.Expr, err)
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, source{name: name, text: text, step: s})
		}
	}
	return out, skipped
}

// batch concatenates sources into programs of about n kernels each: one
// NVRTC (or clang) run per batch instead of per kernel. The generated
// helpers are include-guarded, so concatenation is valid.
func batch(srcs []source, n int) [][]source {
	var out [][]source
	for len(srcs) > n {
		out = append(out, srcs[:n])
		srcs = srcs[n:]
	}
	if len(srcs) > 0 {
		out = append(out, srcs)
	}
	return out
}

func join(b []source) string {
	var sb strings.Builder
	for _, s := range b {
		sb.WriteString(s.text)
	}
	return sb.String()
}

// missing skips loudly when a compiler is not installed, except in CI
// (CI=true), where .ci/run installs it and its absence is a failure.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI must have this compiler: "+format, args...)
	}
	t.Skipf("SKIPPING: "+format, args...)
}
