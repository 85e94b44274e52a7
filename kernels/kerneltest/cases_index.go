package kerneltest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// anyValues returns values of a random dtype (all of them take part in
// the copying ops).
func anyValues(rng *rand.Rand, shape ...int) (kernels.DType, ND) {
	dt := allDTypes[rng.IntN(len(allDTypes))]
	return dt, randValues(rng, dt, -100, 100, shape...)
}

func gatherCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for range 12 {
		shape := randShape(rng, 1, 3, 5)
		axis := rng.IntN(len(shape))
		dt, data := anyValues(rng, shape...)
		ishape := randShape(rng, 0, 2, 4)
		idt := []kernels.DType{kernels.I32, kernels.I64}[rng.IntN(2)]
		dim := shape[axis]
		idx := randValues(rng, idt, float64(-dim), float64(dim-1), ishape...) // negative: from the end
		attr := kernels.AxisAttr{Axis: axis}
		c := &kcase{group: "gather", name: fmt.Sprintf("axis %d", axis), step: kernels.Step{Attr: attr}}
		c.in = []*operand{in(rng, dt, data, true), in(rng, idt, idx, false)}
		oshape := append(append(slices.Clone(shape[:axis]), ishape...), shape[axis+1:]...)
		c.out = []*operand{outOperand(rng, dt, oshape, dense)}
		c.tol = []tolerance{exactly}
		c.ref = func(in []ND) []ND { return []ND{Gather(in[0], axis, in[1])} }
		cs = append(cs, c)
	}
	return cs
}

func repeatCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for range 10 {
		shape := randShape(rng, 1, 3, 5)
		axis := rng.IntN(len(shape))
		dt, data := anyValues(rng, shape...)
		cdt := []kernels.DType{kernels.I32, kernels.I64}[rng.IntN(2)]
		counts := randValues(rng, cdt, 0, 3, shape[axis])
		cnt := make([]int, len(counts.Data))
		oshape := slices.Clone(shape)
		oshape[axis] = 0
		for i, v := range counts.Data {
			cnt[i] = int(v)
			oshape[axis] += cnt[i]
		}
		attr := kernels.AxisAttr{Axis: axis}
		c := &kcase{group: "repeat_interleave", name: fmt.Sprintf("axis %d, counts %v", axis, cnt), step: kernels.Step{Attr: attr}}
		c.in = []*operand{in(rng, dt, data, false), in(rng, cdt, counts, false)}
		c.out = []*operand{outOperand(rng, dt, oshape, dense)}
		c.tol = []tolerance{exactly}
		c.ref = func(in []ND) []ND { return []ND{RepeatInterleave(in[0], axis, cnt)} }
		cs = append(cs, c)
	}
	return cs
}

func padCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	modes := []kernels.PadMode{kernels.PadConstant, kernels.PadReflect, kernels.PadReplicate}
	names := []string{"pad/constant", "pad/reflect", "pad/replicate"}
	for i := range 18 {
		mode := modes[i%3]
		shape := randShape(rng, 1, 3, 5)
		if i == 4 {
			shape[len(shape)-1] = 60 // a row copied in one piece
		}
		dt, data := anyValues(rng, shape...)
		before, after := make([]int, len(shape)), make([]int, len(shape))
		for d, n := range shape {
			lim := 3
			if mode == kernels.PadReflect {
				lim = n // reflect excludes the edge: the pad must be shorter than the axis
			}
			before[d], after[d] = rng.IntN(lim), rng.IntN(lim)
		}
		value := roundTo(dt, randValues(rng, dt, -100, 100, 1).Data[0])
		attr := kernels.PadAttr{Mode: mode, Before: before, After: after, Value: value}
		oshape := slices.Clone(shape)
		for d := range oshape {
			oshape[d] += before[d] + after[d]
		}
		c := &kcase{group: names[i%3], name: fmt.Sprintf("before %v, after %v, value %v", before, after, value), step: kernels.Step{Attr: attr}}
		c.in = []*operand{in(rng, dt, data, false)}
		c.out = []*operand{outOperand(rng, dt, oshape, dense)}
		c.tol = []tolerance{exactly}
		c.ref = func(in []ND) []ND { return []ND{Pad(in[0], mode, value, before, after)} }
		cs = append(cs, c)
	}
	return cs
}

func cumsumCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 12 {
		shape := randShape(rng, 1, 3, 6)
		axis := rng.IntN(len(shape))
		dt := []kernels.DType{kernels.F32, kernels.I32, kernels.I64}[i%3]
		vals := randValues(rng, dt, -1000, 1000, shape...)
		tol := exactly
		if dt == kernels.F32 {
			vals = f32(rng, -2, 2, shape...)
			tol = tolCumsum
		}
		attr := kernels.CumsumAttr{Axis: axis, Exclusive: rng.IntN(2) == 0, Reverse: rng.IntN(2) == 0}
		c := &kcase{group: "cumsum", name: fmt.Sprintf("%s, axis %d, exclusive %v, reverse %v", dt, axis, attr.Exclusive, attr.Reverse), step: kernels.Step{Attr: attr}}
		c.in = []*operand{in(rng, dt, vals, false)}
		c.out = []*operand{outOperand(rng, dt, shape, dense)}
		c.tol = []tolerance{tol}
		c.ref = func(in []ND) []ND { return []ND{Cumsum(in[0], axis, attr.Exclusive, attr.Reverse)} }
		cs = append(cs, c)
	}
	return cs
}

// byteWeight returns a random U8 or I8 dtype with values spanning it.
func byteWeight(rng *rand.Rand, shape ...int) (kernels.DType, ND) {
	dt := []kernels.DType{kernels.U8, kernels.I8}[rng.IntN(2)]
	return dt, randValues(rng, dt, -128, 255, shape...)
}

func matmulIntegerCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 10 {
		m, k, n := 1+rng.IntN(8), 1+rng.IntN(40), 1+rng.IntN(12)
		if i == 1 {
			k = 300
		}
		a := randValues(rng, kernels.U8, 0, 255, m, k)
		bdt, b := byteWeight(rng, k, n)
		za := randValues(rng, kernels.U8, 0, 255, scalarShape(rng)...)
		zshape := scalarShape(rng)
		if rng.IntN(2) == 0 {
			zshape = []int{n} // one zero point per output column
		}
		zb := randValues(rng, bdt, -128, 255, zshape...)
		c := &kcase{group: "matmul_integer", name: fmt.Sprintf("%d×%d·%d×%d, b %s, b zero %v", m, k, k, n, bdt, zshape)}
		bo := newOperand(rng, bdt, b, gemm, nil)
		wrap := rng.IntN(2) == 0 // a weight with its zero points: packed once
		bo.wrap = wrap
		zbo := in(rng, bdt, zb, false)
		zbo.wrap = wrap
		c.in = []*operand{in(rng, kernels.U8, a, false), bo, in(rng, kernels.U8, za, false), zbo}
		c.out = []*operand{outOperand(rng, kernels.I32, []int{m, n}, dense)}
		c.tol = []tolerance{exactly}
		c.ref = func(in []ND) []ND { return []ND{MatMulInteger(in[0], in[1], in[2].Data[0], in[3].Data)} }
		cs = append(cs, c)
	}
	return cs
}

func convIntegerCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for range 8 {
		cin, cout, k := 1+rng.IntN(4), 1+rng.IntN(5), 1+rng.IntN(5)
		stride, dil := 1+rng.IntN(3), 1+rng.IntN(2)
		padL, padR := rng.IntN(3), rng.IntN(3)
		span := dil*(k-1) + 1
		l := max(1, span-padL-padR) + rng.IntN(20)
		x := randValues(rng, kernels.U8, 0, 255, 1+rng.IntN(2), cin, l)
		wdt, w := byteWeight(rng, cout, cin, k)
		zx := randValues(rng, kernels.U8, 0, 255, scalarShape(rng)...)
		zw := randValues(rng, wdt, -128, 255, scalarShape(rng)...)
		attr := kernels.ConvAttr{Stride: stride, PadLeft: padL, PadRight: padR, Dilation: dil, Groups: 1}
		c := &kcase{group: "conv_integer1d", step: kernels.Step{Attr: attr}}
		c.name = fmt.Sprintf("x %v, w %s%v, stride %d, pad %d/%d, dilation %d", x.Shape, wdt, w.Shape, stride, padL, padR, dil)
		wrap := rng.IntN(2) == 0
		wo, zwo := in(rng, wdt, w, false), in(rng, wdt, zw, false)
		wo.wrap, zwo.wrap = wrap, wrap
		c.in = []*operand{in(rng, kernels.U8, x, false), wo, in(rng, kernels.U8, zx, false), zwo}
		lout := (l+padL+padR-span)/stride + 1
		c.out = []*operand{outOperand(rng, kernels.I32, []int{x.Shape[0], cout, lout}, dense)}
		c.tol = []tolerance{exactly}
		c.ref = func(in []ND) []ND {
			return []ND{ConvInteger1d(in[0], in[1], in[2].Data[0], in[3].Data[0], stride, padL, padR, dil)}
		}
		cs = append(cs, c)
	}
	return cs
}

func dynamicQuantizeCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 8 {
		shape := randShape(rng, 1, 3, 8)
		lo, hi := -3.0, 2.0
		switch i {
		case 1:
			lo = 0.5 // all positive: the range still includes 0
		case 2:
			lo, hi = -4, -1
		case 3:
			lo, hi = 0, 0 // all zero: scale 1
		}
		x := f32(rng, lo, hi, shape...)
		c := &kcase{group: "dynamic_quantize", name: fmt.Sprintf("values in [%v, %v)", lo, hi)}
		c.in = []*operand{in(rng, kernels.F32, x, false)}
		c.out = []*operand{outOperand(rng, kernels.U8, shape, dense), outOperand(rng, kernels.F32, scalarShape(rng), dense), outOperand(rng, kernels.U8, scalarShape(rng), dense)}
		c.tol = []tolerance{tolQuant, exactly, exactly}
		c.ref = func(in []ND) []ND {
			q, s, z := DynamicQuantize(in[0])
			return []ND{q, {Shape: []int{1}, Data: []float64{s}}, {Shape: []int{1}, Data: []float64{z}}}
		}
		cs = append(cs, c)
	}
	return cs
}

func linearQCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 12 {
		m, k, n := 1+rng.IntN(6), 1+rng.IntN(70), 1+rng.IntN(9)
		switch i {
		case 1:
			k, n = 384, 40 // long rows, several vector blocks
		case 2:
			m, k, n = 1, 1536, 70 // a decoder step's wide product
		case 3:
			m, k, n = 11, 384, 33 // more rows than one pass takes
		case 10:
			m, k, n = 19+rng.IntN(14), 384, 31 // a batch of sequences' step
		case 11:
			m, k, n = 16+rng.IntN(20), 40+rng.IntN(70), 4096+rng.IntN(70) // wide: in tiles on a GPU
		}
		wdt, w := byteWeight(rng, n, k)
		zero := randValues(rng, wdt, -128, 255, scalarShape(rng)...)
		scale := ND{Shape: scalarShape(rng), Data: []float64{float64(float32(0.001 + 0.05*rng.Float64()))}}
		c := &kcase{group: "linear_q", name: fmt.Sprintf("%d×%d·(%s %d×%d)ᵀ", m, k, wdt, n, k)}
		c.in = []*operand{in(rng, kernels.F32, f32(rng, -2, 2, m, k), false), in(rng, wdt, w, true), in(rng, kernels.F32, scale, true), in(rng, wdt, zero, true)}
		c.out = []*operand{outOperand(rng, kernels.F32, []int{m, n}, dense)}
		c.tol = []tolerance{tolGEMM}
		c.ref = func(in []ND) []ND { return []ND{LinearQ(in[0], in[1], in[2].Data[0], in[3].Data[0])} }
		cs = append(cs, c)
	}
	return cs
}

func sliceUpdateCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 14 {
		shape := randShape(rng, 1, 4, 6)
		axis := rng.IntN(len(shape))
		if i >= 10 { // a start per row: a batch of caches, each at its own length
			axis = max(axis, 1)
			shape = append([]int{2 + rng.IntN(3)}, shape...)
		}
		dt, dst := anyValues(rng, shape...)
		sshape := slices.Clone(shape)
		sshape[axis] = 1 + rng.IntN(shape[axis])
		src := randValues(rng, dt, -100, 100, sshape...)
		sdt := []kernels.DType{kernels.I32, kernels.I64}[rng.IntN(2)]
		rows := 1
		for _, x := range shape[:axis] {
			rows *= x
		}
		starts := ND{Shape: scalarShape(rng), Data: []float64{float64(rng.IntN(shape[axis] - sshape[axis] + 1))}}
		if i >= 10 {
			starts = NewND(rows)
			for r := range starts.Data {
				starts.Data[r] = float64(rng.IntN(shape[axis] - sshape[axis] + 1))
			}
		}
		attr := kernels.AxisAttr{Axis: axis}
		c := &kcase{group: "slice_update", name: fmt.Sprintf("axis %d, %d at %v of %d", axis, sshape[axis], starts.Data, shape[axis]), step: kernels.Step{Attr: attr}}
		c.in = []*operand{in(rng, dt, src, false), in(rng, sdt, starts, false)}
		out := newOperand(rng, dt, dst, dense, nil) // the state: every element outside the window keeps its value
		out.init = true
		c.out = []*operand{out}
		c.tol = []tolerance{exactly}
		c.ref = func(in []ND) []ND {
			want := dst.Clone()
			for i := range in[0].Data {
				idx := Unravel(i, sshape)
				row := numelIndex(idx[:axis], shape[:axis])
				idx[axis] += int(starts.Data[min(row, len(starts.Data)-1)])
				want.Data[numelIndex(idx, shape)] = in[0].Data[i]
			}
			return []ND{want}
		}
		cs = append(cs, c)
	}
	return cs
}
