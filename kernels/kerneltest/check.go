package kerneltest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// tolerance is the error a case's output may have against the reference.
type tolerance struct {
	// L2 bounds the relative L2 error ‖got − want‖/‖s‖ over the finite
	// elements, where s is want or, for cases that give one, each
	// element's scale (the magnitude its computation went through); Abs
	// per element is allowed on top.
	L2 float64
	// Abs and Rel bound every finite element: |got − want| ≤ Abs + Rel·s,
	// s the element's scale or else max|want|.
	Abs, Rel float64
}

// exactly is the tolerance of results every correct backend computes bit
// for bit (copies, integer arithmetic, comparisons).
var exactly = tolerance{}

func (t tolerance) zero() bool { return t == tolerance{} }

func (t tolerance) String() string {
	if t.zero() {
		return "exact"
	}
	return fmt.Sprintf("%.0e/%.0e", t.L2, t.Abs+t.Rel)
}

// scaled widens a tolerance by f (an exact one stays exact).
func (t tolerance) scaled(f float64) tolerance {
	return tolerance{L2: t.L2 * f, Abs: t.Abs * f, Rel: t.Rel * f}
}

// storage widens a computed result's tolerance by one rounding to an
// output dtype narrower than float32: the unrounded values of two correct
// implementations may straddle a rounding boundary.
func storage(t tolerance, dt kernels.DType) tolerance {
	if t.zero() {
		return t
	}
	switch dt {
	case kernels.F16:
		return tolerance{L2: max(t.L2, 1e-3), Abs: t.Abs, Rel: max(t.Rel, 1e-3)} // 2⁻¹⁰: one half-precision ulp
	case kernels.BF16:
		return tolerance{L2: max(t.L2, 8e-3), Abs: t.Abs, Rel: max(t.Rel, 8e-3)} // 2⁻⁷: one bfloat16 ulp
	}
	if dt.IsInt() || dt == kernels.Bool {
		return tolerance{L2: max(t.L2, 1e-3), Abs: max(t.Abs, 1)} // truncation of a value within rounding of an integer
	}
	return t
}

// Option configures Check.
type Option func(*config)

type config struct {
	seed    uint64
	float64 bool
	verbose bool
	ops     []kernels.Op
}

// Seed changes the random seed (default 1). Every seed gives the same
// cases on every run and machine.
func Seed(s uint64) Option { return func(c *config) { c.seed = s } }

// AgainstFloat64 compares with the textbook float64 references of this
// package instead of with kernels/cpu: how the CPU backend itself is
// checked.
func AgainstFloat64() Option { return func(c *config) { c.float64 = true } }

// Verbose logs every case with its errors, not only one line per group.
func Verbose() Option { return func(c *config) { c.verbose = true } }

// Only restricts the cases to steps of the given ops.
func Only(ops ...kernels.Op) Option { return func(c *config) { c.ops = ops } }

// Check runs every kernels.Op and a set of random fused expressions, with
// random shapes, strides and dtypes, on backend b through its Queue API,
// and compares each output with the reference: kernels/cpu running the
// same step, or with AgainstFloat64 the float64 references. It fails the
// test for every case outside its tolerance, for any NaN or infinity
// where the reference has none (or the reverse), for a write outside a
// step's outputs, and for a launch that fails (an error or a panic).
// Steps b declines (kernels.Supporter) are skipped and listed. It logs one
// line per group of cases with the worst errors seen.
func Check(t testing.TB, b kernels.Backend, opts ...Option) {
	t.Helper()
	cfg := config{seed: 1}
	for _, o := range opts {
		o(&cfg)
	}
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	cases := allCases(rng)
	// Wrapped bytes must outlive every buffer made from them, and backends
	// may key caches by their address: keep them until the test ends.
	t.Cleanup(func() { runtime.KeepAlive(cases) })

	ctx := context.Background()
	q, err := b.NewQueue()
	if err != nil {
		t.Fatalf("kerneltest: %s: new queue: %v", b.Name(), err)
	}
	defer q.Close()
	var ref kernels.Backend
	var rq kernels.Queue
	against := "float64 references"
	if !cfg.float64 {
		ref = cpu.New()
		if rq, err = ref.NewQueue(); err != nil {
			t.Fatalf("kerneltest: reference queue: %v", err)
		}
		defer rq.Close()
		against = "kernels/cpu"
	}
	sup, _ := b.(kernels.Supporter)

	rows := map[string]*row{}
	var order []string
	skipped := map[string]int{}
	ran := 0
	for _, c := range cases {
		if cfg.ops != nil && !slices.Contains(cfg.ops, c.step.Op) {
			continue
		}
		if sup != nil && !sup.Supports(&c.step) {
			skipped[c.group]++
			continue
		}
		r := rows[c.group]
		if r == nil {
			r = &row{}
			rows[c.group] = r
			order = append(order, c.group)
		}
		r.cases++
		ran++
		got, err := c.run(ctx, b, q)
		if err != nil {
			r.failed++
			t.Errorf("kerneltest: %s: %s: %v", b.Name(), c.describe(), err)
			continue
		}
		if msg := c.sideEffects(got); msg != "" {
			r.failed++
			t.Errorf("kerneltest: %s: %s: %s", b.Name(), c.describe(), msg)
			continue
		}
		var want [][]float64
		if ref != nil {
			rb, err := c.run(ctx, ref, rq)
			if err != nil {
				t.Fatalf("kerneltest: reference cpu: %s: %v", c.describe(), err)
			}
			want = c.outputs(rb)
		} else {
			want = c.reference()
		}
		outs := c.outputs(got)
		failed := false
		for k, o := range c.out {
			tol := storage(c.tol[k], o.dtype)
			if ref != nil {
				tol = tol.scaled(2) // both sides carry their own error
			}
			var scale []float64
			if c.scale != nil {
				scale = c.scale()[k]
			}
			e := compare(outs[k], want[k], scale, tol)
			r.add(e, tol)
			if cfg.verbose {
				t.Logf("%-28s output %d %s%v: rel L2 %.3g, max abs %.3g, tolerance %s (%s)", c.group, k, o.dtype, o.view.Shape, e.l2, e.abs, tol, c.name)
			}
			if e.msg != "" {
				failed = true
				t.Errorf("kerneltest: %s: %s: output %d %s%v: %s", b.Name(), c.describe(), k, o.dtype, o.view.Shape, e.msg)
			}
		}
		if failed {
			r.failed++
		}
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "kerneltest: %d cases on %s against %s (seed %d)\n", ran, b.Name(), against, cfg.seed)
	fmt.Fprintf(&tb, "%-28s %6s %12s %12s %12s %7s\n", "group", "cases", "rel L2", "max abs", "tol L2/elem", "failed")
	for _, g := range order {
		r := rows[g]
		fmt.Fprintf(&tb, "%-28s %6d %12.3g %12.3g %12s %7d\n", g, r.cases, r.l2, r.abs, r.tol, r.failed)
	}
	if len(skipped) > 0 {
		var names []string
		for g, n := range skipped {
			names = append(names, fmt.Sprintf("%s (%d)", g, n))
		}
		slices.Sort(names)
		fmt.Fprintf(&tb, "skipped, not supported by %s: %s\n", b.Name(), strings.Join(names, ", "))
	}
	if missing := Uncovered(); len(missing) > 0 {
		fmt.Fprintf(&tb, "ops without cases in this kit: %v\n", missing)
	}
	t.Log(tb.String())
}

// row accumulates one group's results for the report.
type row struct {
	cases, failed int
	l2, abs       float64
	loosest       tolerance // the loosest tolerance in the group, for the report
	tol           string
}

func (r *row) add(e errs, t tolerance) {
	r.l2 = max(r.l2, e.l2)
	r.abs = max(r.abs, e.abs)
	if r.tol == "" || t.L2 > r.loosest.L2 {
		r.loosest, r.tol = t, t.String()
	}
}

// errs is one output's comparison.
type errs struct {
	l2, abs float64
	msg     string // why it fails; empty when it passes
}

// compare measures got against want (same length) and judges it by tol.
// Errors are relative to scale[i] where given (the magnitudes the
// computation went through), else to want's largest magnitude. Non-finite
// values must agree exactly, whatever the tolerance.
func compare(got, want, scale []float64, tol tolerance) errs {
	var num, den, top, worst, worstAllowed float64
	n := 0
	at := -1
	for _, w := range want {
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			top = max(top, math.Abs(w))
		}
	}
	for i, w := range want {
		g := got[i]
		if math.IsNaN(w) || math.IsInf(w, 0) || math.IsNaN(g) || math.IsInf(g, 0) {
			if !(math.IsNaN(w) && math.IsNaN(g)) && g != w {
				return errs{l2: math.Inf(1), abs: math.Inf(1), msg: fmt.Sprintf("element %d is %v, want %v (non-finite values must agree)", i, g, w)}
			}
			continue
		}
		s := top
		if scale != nil {
			s = max(math.Abs(w), scale[i])
			den += s * s
		} else {
			den += w * w
		}
		d := math.Abs(g - w)
		num += d * d
		n++
		if allowed := tol.Abs + tol.Rel*s; at < 0 || d-allowed > worst-worstAllowed {
			worst, worstAllowed, at = d, allowed, i
		}
	}
	e := errs{}
	for i, w := range want {
		if d := math.Abs(got[i] - w); d > e.abs {
			e.abs = d
		}
	}
	e.l2 = math.Sqrt(num)
	if den > 0 {
		e.l2 = math.Sqrt(num / den)
	}
	switch {
	case math.Sqrt(num) > tol.L2*math.Sqrt(den)+tol.Abs*math.Sqrt(float64(n)):
		e.msg = fmt.Sprintf("rel L2 error %.3g > %.3g (element %d: got %v, want %v)", e.l2, tol.L2, at, got[at], want[at])
	case at >= 0 && worst > worstAllowed:
		e.msg = fmt.Sprintf("element %d is %v, want %v: |error| %.3g > %.3g", at, got[at], want[at], worst, worstAllowed)
	}
	return e
}

// Uncovered lists the ops of package kernels that the kit has no cases
// for: a new op needs cases here before backends can be checked on it.
func Uncovered() []kernels.Op {
	have := map[kernels.Op]bool{}
	for _, g := range generators() {
		have[g.op] = true
	}
	var missing []kernels.Op
	for op := kernels.OpInvalid + 1; !strings.HasPrefix(op.String(), "op("); op++ {
		if !have[op] {
			missing = append(missing, op)
		}
	}
	return missing
}
