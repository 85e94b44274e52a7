package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// Tolerances of float32 kernels against the exact (float64) answer. Each
// says why it is as loose as it is; a wrong kernel misses them by orders
// of magnitude.
var (
	// Sums of up to a few hundred float32 values, accumulated in float32
	// in any order (the CPU accumulates in float64).
	tolReduce = tolerance{L2: 1e-5, Abs: 1e-6, Rel: 1e-5}
	// Exponentials and one normalising sum per row.
	tolSoftmax = tolerance{L2: 2e-6, Abs: 1e-7, Rel: 2e-6}
	// Mean and variance over a row, then an affine map.
	tolNorm = tolerance{L2: 1e-5, Abs: 1e-6, Rel: 1e-5}
	// Float32 dot products of up to a few hundred terms, summed in any
	// order and blocking (no TF32 or other reduced-precision products).
	tolGEMM = tolerance{L2: 1e-5, Abs: 1e-6, Rel: 2e-5}
	// A few recurrent steps of products and sigmoid/tanh.
	tolLSTM = tolerance{L2: 1e-5, Abs: 1e-6, Rel: 2e-5}
	// A running float32 sum along an axis, in order.
	tolCumsum = tolerance{L2: 1e-6, Abs: 1e-7, Rel: 1e-6}
	// DynamicQuantize's q: a backend may multiply by 1/scale instead of
	// dividing, which moves a value at a rounding tie by one step.
	tolQuant = tolerance{L2: 1e-2, Abs: 1}
)

// generator makes the cases of one op.
type generator struct {
	op  kernels.Op
	gen func(rng *rand.Rand) []*kcase
}

// generators lists the cases of every op the kit covers.
func generators() []generator {
	return []generator{
		{kernels.OpFused, fusedCases},
		{kernels.OpReduce, reduceCases},
		{kernels.OpSoftmax, softmaxCases},
		{kernels.OpLayerNorm, layerNormCases},
		{kernels.OpGroupNorm, groupNormCases},
		{kernels.OpMatMul, matmulCases},
		{kernels.OpConv1d, conv1dCases},
		{kernels.OpConvTranspose1d, convTransposeCases},
		{kernels.OpLSTM, lstmCases},
		{kernels.OpGather, gatherCases},
		{kernels.OpRepeatInterleave, repeatCases},
		{kernels.OpPad, padCases},
		{kernels.OpCumsum, cumsumCases},
		{kernels.OpMatMulInteger, matmulIntegerCases},
		{kernels.OpConvInteger1d, convIntegerCases},
		{kernels.OpDynamicQuantize, dynamicQuantizeCases},
		{kernels.OpLinearQ, linearQCases},
		{kernels.OpAttention, attentionCases},
		{kernels.OpSliceUpdate, sliceUpdateCases},
	}
}

// allCases generates every case and lays out its buffers, in an order
// that depends only on rng.
func allCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for _, g := range generators() {
		for _, c := range g.gen(rng) {
			c.step.Op = g.op
			c.build(rng)
			cs = append(cs, c)
		}
	}
	return cs
}

// Helpers shared by the generators.

var allDTypes = []kernels.DType{kernels.F32, kernels.F16, kernels.BF16, kernels.I32, kernels.I64, kernels.U8, kernels.I8, kernels.Bool}

func randShape(rng *rand.Rand, minRank, maxRank, maxExt int) []int {
	s := make([]int, minRank+rng.IntN(maxRank-minRank+1))
	for d := range s {
		s[d] = 1 + rng.IntN(maxExt)
	}
	return s
}

// in is a dense input of dtype (at an offset), wrapped like a weight now
// and then when weight is set.
func in(rng *rand.Rand, dt kernels.DType, vals ND, weight bool) *operand {
	o := newOperand(rng, dt, vals, dense, nil)
	o.wrap = weight && rng.IntN(2) == 0
	return o
}

func f32(rng *rand.Rand, lo, hi float64, shape ...int) ND {
	return randValues(rng, kernels.F32, lo, hi, shape...)
}

// scalarShape is how the graph shapes a single value: [] or [1].
func scalarShape(rng *rand.Rand) []int {
	if rng.IntN(2) == 0 {
		return []int{}
	}
	return []int{1}
}

func reduceCases(rng *rand.Rand) []*kcase {
	type kind struct {
		k    kernels.ReduceKind
		name string
		f    func([]float64) float64
		ints bool
	}
	kinds := []kind{
		{kernels.ReduceSum, "sum", Sum, true}, {kernels.ReduceMean, "mean", Mean, false},
		{kernels.ReduceMax, "max", Max, true}, {kernels.ReduceMin, "min", Min, true},
		{kernels.ReduceProd, "prod", Prod, false}, {kernels.ReduceArgMax, "argmax", ArgMax, true},
		{kernels.ReduceArgMin, "argmin", ArgMin, true}, {kernels.ReduceVar, "var", nil, false},
	}
	var cs []*kcase
	for _, kd := range kinds {
		for i := range 7 {
			shape := randShape(rng, 1, 4, 5)
			if i == 1 {
				shape[len(shape)-1] = 40 + rng.IntN(200)
			}
			var axes []int
			for len(axes) == 0 {
				for d := range shape {
					if rng.IntN(2) == 0 {
						axes = append(axes, d)
					}
				}
			}
			count := 1
			for _, a := range axes {
				count *= shape[a]
			}
			dt := kernels.F32
			switch {
			case i >= 5 && kd.ints:
				dt = []kernels.DType{kernels.I32, kernels.I64, kernels.U8, kernels.I8}[rng.IntN(4)]
			case i >= 3:
				dt = []kernels.DType{kernels.F16, kernels.BF16}[rng.IntN(2)]
			}
			lo, hi := -3.0, 3.0
			switch {
			case kd.k == kernels.ReduceProd:
				lo, hi = 0.7, 1.4
				shape = randShape(rng, 1, 3, 4)
				axes = []int{rng.IntN(len(shape))}
			case dt == kernels.U8:
				lo, hi = 0, float64(255/count)
			case dt == kernels.I8:
				lo, hi = -float64(127/count), float64(127/count)
			case dt.IsInt():
				lo, hi = -1000, 1000
			}
			bc := broadcastAxes(rng, shape, 0)
			vals := expand(randValues(rng, dt, lo, hi, shape...), bc)
			detail := ""
			if i == 2 && dt == kernels.F32 && kd.k != kernels.ReduceVar && kd.k != kernels.ReduceMean {
				vals.Data[rng.IntN(len(vals.Data))] = math.NaN()
				bc = nil // the NaN is in one place only
				detail = "with a NaN"
			}
			cs = append(cs, reduceCase(rng, kd.k, kd.name, detail, kd.f, dt, vals, axes, bc, 1-i%2))
		}
	}
	// A sum and a product over an empty axis: 0 and 1.
	for _, k := range []kind{{k: kernels.ReduceSum, name: "sum", f: Sum}, {k: kernels.ReduceProd, name: "prod", f: Prod}} {
		cs = append(cs, reduceCase(rng, k.k, k.name, "over an empty axis", k.f, kernels.F32, NewND(3, 0, 2), []int{1}, nil, 0))
	}
	return cs
}

func reduceCase(rng *rand.Rand, k kernels.ReduceKind, base, detail string, f func([]float64) float64, dt kernels.DType, vals ND, axes, bc []int, corr int) *kcase {
	attr := kernels.ReduceAttr{Kind: k, Axes: axes, Correction: corr}
	if k == kernels.ReduceVar {
		f = Variance(corr)
		detail = fmt.Sprintf("correction %d", corr)
	}
	oshape := slices.Clone(vals.Shape)
	for _, a := range axes {
		oshape[a] = 1
	}
	odt := dt
	tol := tolReduce
	switch {
	case k == kernels.ReduceArgMax || k == kernels.ReduceArgMin:
		odt, tol = kernels.I64, exactly
	case k == kernels.ReduceMax || k == kernels.ReduceMin || !dt.IsFloat():
		tol = exactly
	}
	c := &kcase{group: "reduce/" + base, name: detail, step: kernels.Step{Attr: attr}}
	c.in = []*operand{newOperand(rng, dt, vals, strided, bc)}
	c.out = []*operand{outOperand(rng, odt, oshape, dense)}
	c.tol = []tolerance{tol}
	c.ref = func(in []ND) []ND { return []ND{Reduce(in[0], axes, true, f)} }
	return c
}
