package cuda

import (
	"testing"

	"github.com/tensorforge/forge/kernels"
)

// TestResidualOf: which sums after a product the product computes as its
// C (residual.go): a sum with one tensor of its shape, with a bias over its
// columns too; not another operation, nor a sum whose product output is
// read later, nor one with a broadcast addend the product cannot take,
// nor one writing over the product's input.
func TestResidualOf(t *testing.T) {
	const m, n, k = 30, 64, 48
	f32 := kernels.F32
	a, w := dv(1, 0, f32, m, k), dv(2, 0, f32, k, n)
	prod := dv(0, 0, f32, m, n)
	r := dv(3, 0, f32, m, n)
	y := dv(0, m*n, f32, m, n)
	bias := kernels.View{Slot: 4, DType: f32, Shape: []int{m, n}, Strides: []int{0, 1}}
	sum := func(ops int) *kernels.Expr {
		e := &kernels.Expr{NumRegs: ops}
		for i := range ops {
			e.Code = append(e.Code, kernels.Instr{Op: kernels.ELoad, Dst: uint16(i), A: uint16(i)})
		}
		for i := 1; i < ops; i++ {
			e.Code = append(e.Code, kernels.Instr{Op: kernels.EAdd, Dst: 0, A: 0, B: uint16(i)})
		}
		return e
	}
	mul := &kernels.Expr{NumRegs: 2, Code: []kernels.Instr{{Op: kernels.ELoad, Dst: 0, A: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EMul, Dst: 0, A: 0, B: 1}}}
	twice := &kernels.Expr{NumRegs: 2, Code: []kernels.Instr{{Op: kernels.ELoad, Dst: 0, A: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EAdd, Dst: 1, A: 0, B: 1}, {Op: kernels.EAdd, Dst: 0, A: 1, B: 1}}}
	readsY := func(v kernels.View) bool { return overlaps(v, y) }
	for _, tc := range []struct {
		name      string
		prodIn    []kernels.View
		addIn     []kernels.View
		out       kernels.View
		expr      *kernels.Expr
		readAfter func(kernels.View) bool
		merged    bool
		withBias  bool
	}{
		{"sum", []kernels.View{a, w}, []kernels.View{r, prod}, y, sum(2), readsY, true, false},
		{"sum with a bias", []kernels.View{a, w}, []kernels.View{prod, bias, r}, y, sum(3), readsY, true, true},
		{"product", []kernels.View{a, w}, []kernels.View{prod, r}, y, mul, readsY, false, false},
		{"a register read twice", []kernels.View{a, w}, []kernels.View{prod, r}, y, twice, readsY, false, false},
		{"product read later", []kernels.View{a, w}, []kernels.View{prod, r}, y, sum(2), func(kernels.View) bool { return true }, false, false},
		{"bias beside the product's own", []kernels.View{a, w, dv(5, 0, f32, n)}, []kernels.View{prod, bias}, y, sum(2), readsY, false, false},
		{"sum over the product's input", []kernels.View{a, w}, []kernels.View{prod, r}, dv(1, 0, f32, m, n), sum(2), func(v kernels.View) bool { return v.Slot == 1 }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := []kernels.Step{
				{Op: kernels.OpMatMul, In: tc.prodIn, Out: []kernels.View{prod}},
				{Op: kernels.OpFused, In: tc.addIn, Out: []kernels.View{tc.out}, Expr: tc.expr},
			}
			got := residualOf(steps, 0, 1, tc.readAfter)
			if (got != nil) != tc.merged {
				t.Fatalf("merged %v, want %v", got != nil, tc.merged)
			}
			if got == nil {
				return
			}
			if got.add != 1 || !sameView(got.c, r) || !sameView(got.out, tc.out) || (got.bias != nil) != tc.withBias {
				t.Errorf("merge %+v: want the sum's step, C %v, D %v, bias %v", got, r, tc.out, tc.withBias)
			}
		})
	}
}
