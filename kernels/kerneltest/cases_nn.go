package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

func softmaxCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 12 {
		shape := randShape(rng, 1, 3, 7)
		if i == 3 {
			shape[len(shape)-1] = 300 // a row longer than a vector loop
		}
		axis := rng.IntN(len(shape))
		vals := f32(rng, -10, 10, shape...)
		name := ""
		if i%3 == 1 { // masked entries, as attention masks make them
			for j := range vals.Data {
				if rng.IntN(4) == 0 {
					vals.Data[j] = math.Inf(-1)
				}
			}
			// Keep one finite value in every row, so no row is all −∞.
			st := vals.Strides()
			for j := range vals.Data {
				if Unravel(j, shape)[axis] == 0 {
					vals.Data[j+rng.IntN(shape[axis])*st[axis]] = 1
				}
			}
			name = "with −∞"
		}
		cs = append(cs, softmaxCase(rng, vals, axis, i%2 == 1, name))
	}
	// A row of −∞ only: 0/0, NaN in torch.
	row := NewND(2, 5)
	for j := range row.Data {
		row.Data[j] = math.Inf(-1)
	}
	row.Data[7] = 2
	cs = append(cs, softmaxCase(rng, row, 1, false, "a row of −∞"), softmaxCase(rng, row, 1, true, "a row of −∞"))
	return cs
}

func softmaxCase(rng *rand.Rand, vals ND, axis int, log bool, name string) *kcase {
	group := "softmax"
	if log {
		group = "log_softmax"
	}
	c := &kcase{group: group, name: name, step: kernels.Step{Attr: kernels.SoftmaxAttr{Axis: axis, Log: log}}}
	c.in = []*operand{in(rng, kernels.F32, vals, false)}
	c.out = []*operand{outOperand(rng, kernels.F32, vals.Shape, dense)}
	c.tol = []tolerance{tolSoftmax}
	c.ref = func(in []ND) []ND { return []ND{Softmax(in[0], axis, log)} }
	return c
}

// affine returns the optional weight and bias inputs of a norm: none,
// weight, or weight and bias.
func affine(rng *rand.Rand, c *kcase, shape []int) {
	for k := range rng.IntN(3) {
		lo, hi := 0.5, 1.5
		if k == 1 {
			lo, hi = -1, 1
		}
		c.in = append(c.in, in(rng, kernels.F32, f32(rng, lo, hi, shape...), true))
	}
}

func optional(in []ND, k int) ND {
	if k < len(in) {
		return in[k]
	}
	return ND{}
}

// normScale gives a norm's elements the magnitude their rounding errors
// are relative to: max|x| of the element's row (or group) times its rstd
// and weight. A row of nearly equal values (σ ≪ |mean|) magnifies the
// rounding of x and of the mean by rstd, however the backend computes.
// block returns the start and length of element i's row; param the index
// of its weight.
func normScale(c *kcase, block func(i int) (int, int), param func(i int) int) func() [][]float64 {
	return func() [][]float64 {
		x := c.in[0].val
		eps := float64(c.step.Attr.(kernels.NormAttr).Eps)
		s := make([]float64, len(x.Data))
		for i := range s {
			lo, n := block(i)
			row := x.Data[lo : lo+n]
			_, rstd := meanRstd(row, eps)
			top := 0.0
			for _, v := range row {
				top = max(top, math.Abs(v))
			}
			w := 1.0
			if len(c.in) > 1 {
				w = math.Abs(c.in[1].val.Data[param(i)])
			}
			s[i] = top * rstd * w
		}
		return [][]float64{s}
	}
}

func layerNormCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 10 {
		shape := randShape(rng, 1, 3, 6)
		if i == 2 {
			shape[len(shape)-1] = 384
		}
		axis := rng.IntN(len(shape))
		attr := kernels.NormAttr{Axis: axis, Eps: 1e-5}
		c := &kcase{group: "layer_norm", step: kernels.Step{Attr: attr}}
		c.in = []*operand{in(rng, kernels.F32, f32(rng, -2, 5, shape...), false)}
		affine(rng, c, shape[axis:])
		c.name = fmt.Sprintf("axis %d, %d affine inputs", axis, len(c.in)-1)
		c.out = []*operand{outOperand(rng, kernels.F32, shape, dense)}
		c.tol = []tolerance{tolNorm}
		c.ref = func(in []ND) []ND {
			return []ND{LayerNorm(in[0], optional(in, 1), optional(in, 2), axis, float64(attr.Eps))}
		}
		n := numel(shape[axis:])
		c.scale = normScale(c, func(i int) (int, int) { return i / n * n, n }, func(i int) int { return i % n })
		cs = append(cs, c)
	}
	return cs
}

func groupNormCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for range 10 {
		groups, cg := 1+rng.IntN(3), 1+rng.IntN(3)
		shape := append([]int{1 + rng.IntN(2), groups * cg}, randShape(rng, 0, 2, 9)...)
		attr := kernels.NormAttr{Groups: groups, Eps: 1e-5}
		c := &kcase{group: "group_norm", step: kernels.Step{Attr: attr}}
		c.in = []*operand{in(rng, kernels.F32, f32(rng, -2, 5, shape...), false)}
		affine(rng, c, shape[1:2])
		c.name = fmt.Sprintf("%d groups, %d affine inputs", groups, len(c.in)-1)
		c.out = []*operand{outOperand(rng, kernels.F32, shape, dense)}
		c.tol = []tolerance{tolNorm}
		c.ref = func(in []ND) []ND {
			return []ND{GroupNorm(in[0], groups, optional(in, 1), optional(in, 2), float64(attr.Eps))}
		}
		l := numel(shape[2:])
		c.scale = normScale(c, func(i int) (int, int) { return i / (cg * l) * (cg * l), cg * l }, func(i int) int { return i / l % (groups * cg) })
		cs = append(cs, c)
	}
	return cs
}

// batched returns a matrix operand [batch..., r, c] with values in
// [lo, hi), read through a GEMM layout, whose batch axes in bc repeat
// (stride 0).
func batched(rng *rand.Rand, batch []int, r, c int, bc []int, lo, hi float64) *operand {
	shape := append(slices.Clone(batch), r, c)
	vals := expand(f32(rng, lo, hi, shape...), bc)
	return newOperand(rng, kernels.F32, vals, gemm, bc)
}

func matmulCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 16 {
		batch := randShape(rng, 0, 2, 3)
		m, k, n := 1+rng.IntN(24), 1+rng.IntN(24), 1+rng.IntN(24)
		switch i {
		case 1:
			k = 0 // an empty sum: zeros
		case 2:
			m = 1 // a vector times a matrix
		case 3:
			n = 1
		case 4:
			k = 150 + rng.IntN(100)
		case 5:
			m, n = 40+rng.IntN(40), 40+rng.IntN(40)
		}
		// Batch axes broadcast by stride 0 in one operand or the other,
		// as the graph passes torch.matmul's broadcasting.
		a := batched(rng, batch, m, k, broadcastAxes(rng, batch, 0), -1, 1)
		b := batched(rng, batch, k, n, broadcastAxes(rng, batch, 0), -1, 1)
		b.wrap = len(batch) == 0 && rng.IntN(2) == 0 // a weight
		c := &kcase{group: "matmul", name: fmt.Sprintf("batch %v, %d×%d·%d×%d", batch, m, k, k, n)}
		c.in = []*operand{a, b}
		if rng.IntN(3) == 0 {
			c.in = append(c.in, in(rng, kernels.F32, f32(rng, -1, 1, n), true))
			c.name += " + bias"
		}
		c.out = []*operand{outOperand(rng, kernels.F32, append(slices.Clone(batch), m, n), dense)}
		c.tol = []tolerance{tolGEMM}
		c.ref = func(in []ND) []ND {
			y := MatMul(in[0], in[1], false, false)
			if len(in) > 2 {
				for j := range y.Data {
					y.Data[j] += in[2].Data[j%n]
				}
			}
			return []ND{y}
		}
		cs = append(cs, c)
	}
	return cs
}

func attentionCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 10 {
		batch := randShape(rng, 0, 2, 3)
		n, s, d, dv := 1+rng.IntN(10), 1+rng.IntN(30), 1+rng.IntN(16), 1+rng.IntN(12)
		switch i {
		case 1:
			s = 200 + rng.IntN(100)
		case 3, 4, 5:
			// Whisper's decoder step: one query row against a long run
			// of keys of its head width (the keys split between blocks).
			n, s, d, dv = 1, 600+rng.IntN(1000), 64, 64
		}
		q := batched(rng, batch, n, d, broadcastAxes(rng, batch, 0), -1, 1)
		bc := broadcastAxes(rng, batch, 0) // keys and values shared across a batch axis
		k := batched(rng, batch, s, d, bc, -1, 1)
		v := batched(rng, batch, s, dv, bc, -1, 1)
		c := &kcase{group: "attention", name: fmt.Sprintf("batch %v, n %d, s %d, d %d, dv %d", batch, n, s, d, dv)}
		c.in = []*operand{q, k, v}
		if i%2 == 1 {
			// A causal mask (−∞ or the most negative float32 above the
			// diagonal), shifted so every row keeps a key.
			mask := NewND(n, s)
			neg := []float64{math.Inf(-1), -math.MaxFloat32}[rng.IntN(2)]
			for r := range n {
				for j := range s {
					if j > r+s-n {
						mask.Data[r*s+j] = neg
					} else {
						mask.Data[r*s+j] = float64(float32(rng.Float64() - 0.5))
					}
				}
			}
			c.in = append(c.in, in(rng, kernels.F32, mask, false))
			c.name += ", causal mask"
		}
		if i == 2 || i == 4 || i == 6 {
			// A mask per batch item (a batch of sequences of their own
			// lengths): item b sees the first 1 + (b·7 mod s) keys; some
			// batch axes share it by stride 0.
			full := append(slices.Clone(batch), n, s)
			bc := broadcastAxes(rng, batch, 0)
			mask := NewND(full...)
			for e := range mask.Data {
				b, j := e/(n*s), e%s
				if j > (b*7)%s {
					mask.Data[e] = -math.MaxFloat32
				}
			}
			c.in = append(c.in, newOperand(rng, kernels.F32, expand(mask, bc), dense, bc))
			c.name += ", mask per item"
		}
		c.out = []*operand{outOperand(rng, kernels.F32, append(slices.Clone(batch), n, dv), dense)}
		c.tol = []tolerance{tolGEMM}
		c.ref = func(in []ND) []ND { return []ND{Attention(in[0], in[1], in[2], optional(in, 3))} }
		cs = append(cs, c)
	}
	return cs
}

func conv1dCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 16 {
		groups, cig, cog := 1+rng.IntN(3), 1+rng.IntN(4), 1+rng.IntN(3)
		if i%4 == 3 {
			cig, cog = 1, 1 // depthwise
			groups = 1 + rng.IntN(6)
		}
		k, stride, dil := 1+rng.IntN(6), 1+rng.IntN(3), 1+rng.IntN(2)
		padL, padR := rng.IntN(4), rng.IntN(4)
		if i == 5 {
			k, stride, padL, padR, dil = 1, 1, 0, 0, 1 // pointwise
		}
		span := dil*(k-1) + 1
		l := max(1, span-padL-padR) + rng.IntN(30)
		switch i {
		case 6: // few frames of a long kernel, as an STFT as a convolution
			k, stride, dil, padL, padR = 12+rng.IntN(8), 4, 1, 0, 0
			span = k
			l = k + 3*stride
		case 7: // few frames, some of them wholly in the padding
			k, stride, dil, padL, padR = 1+rng.IntN(2), 2, 1, 3, 2
			span = k
			l = 4 + rng.IntN(4)
		}
		x := f32(rng, -1, 1, 1+rng.IntN(2), groups*cig, l)
		w := f32(rng, -1, 1, groups*cog, cig, k)
		attr := kernels.ConvAttr{Stride: stride, PadLeft: padL, PadRight: padR, Dilation: dil, Groups: groups}
		c := &kcase{group: "conv1d", step: kernels.Step{Attr: attr}}
		c.name = fmt.Sprintf("x %v, w %v, stride %d, pad %d/%d, dilation %d, groups %d", x.Shape, w.Shape, stride, padL, padR, dil, groups)
		c.in = []*operand{in(rng, kernels.F32, x, false), in(rng, kernels.F32, w, true)}
		if rng.IntN(2) == 0 {
			c.in = append(c.in, in(rng, kernels.F32, f32(rng, -1, 1, groups*cog), true))
		}
		lout := (l+padL+padR-span)/stride + 1
		c.out = []*operand{outOperand(rng, kernels.F32, []int{x.Shape[0], groups * cog, lout}, dense)}
		c.tol = []tolerance{tolGEMM}
		c.ref = func(in []ND) []ND {
			var b []float64
			if len(in) > 2 {
				b = in[2].Data
			}
			return []ND{Conv1d(in[0], in[1], b, stride, padL, padR, dil, groups)}
		}
		cs = append(cs, c)
	}
	return cs
}

func convTransposeCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 14 {
		groups, cig, cog := 1+rng.IntN(3), 1+rng.IntN(4), 1+rng.IntN(3)
		if i%4 == 3 {
			cig, cog = 1, 1
			groups = 1 + rng.IntN(6)
		}
		k, stride, dil := 1+rng.IntN(6), 1+rng.IntN(3), 1+rng.IntN(2)
		if i == 5 { // an upsampling as in an iSTFT or a vocoder
			k, stride, dil = 2*stride+rng.IntN(3), 2+rng.IntN(3), 1
		}
		pad := rng.IntN(dil*(k-1)/2 + 1)
		outPad := rng.IntN(max(stride, dil))
		l := 1 + rng.IntN(12)
		lout := (l-1)*stride - 2*pad + dil*(k-1) + outPad + 1
		if lout < 1 {
			pad = 0
			lout = (l-1)*stride + dil*(k-1) + outPad + 1
		}
		x := f32(rng, -1, 1, 1+rng.IntN(2), groups*cig, l)
		w := f32(rng, -1, 1, groups*cig, cog, k)
		attr := kernels.ConvAttr{Stride: stride, PadLeft: pad, PadRight: pad, Dilation: dil, Groups: groups, OutputPadding: outPad}
		c := &kcase{group: "conv_transpose1d", step: kernels.Step{Attr: attr}}
		c.name = fmt.Sprintf("x %v, w %v, stride %d, pad %d, output pad %d, dilation %d, groups %d", x.Shape, w.Shape, stride, pad, outPad, dil, groups)
		c.in = []*operand{in(rng, kernels.F32, x, false), in(rng, kernels.F32, w, true)}
		if rng.IntN(2) == 0 {
			c.in = append(c.in, in(rng, kernels.F32, f32(rng, -1, 1, groups*cog), true))
		}
		c.out = []*operand{outOperand(rng, kernels.F32, []int{x.Shape[0], groups * cog, lout}, dense)}
		c.tol = []tolerance{tolGEMM}
		c.ref = func(in []ND) []ND {
			var b []float64
			if len(in) > 2 {
				b = in[2].Data
			}
			return []ND{ConvTranspose1d(in[0], in[1], b, stride, pad, pad, outPad, dil, groups)}
		}
		cs = append(cs, c)
	}
	return cs
}

func lstmCases(rng *rand.Rand) []*kcase {
	var cs []*kcase
	for i := range 8 {
		T, B, I, H := 1+rng.IntN(5), 1+rng.IntN(3), 1+rng.IntN(6), 1+rng.IntN(5)
		D := 1 + i%2
		attr := kernels.LSTMAttr{Hidden: H, Bidirectional: D == 2, BatchFirst: rng.IntN(2) == 0}
		xs := []int{T, B, I}
		ys := []int{T, B, D * H}
		if attr.BatchFirst {
			xs, ys = []int{B, T, I}, []int{B, T, D * H}
		}
		c := &kcase{group: "lstm", step: kernels.Step{Attr: attr}}
		c.name = fmt.Sprintf("T %d, B %d, I %d, H %d, %d directions, batch first %v", T, B, I, H, D, attr.BatchFirst)
		c.in = []*operand{in(rng, kernels.F32, f32(rng, -1, 1, xs...), false)}
		for range D {
			for _, s := range [][]int{{4 * H, I}, {4 * H, H}, {4 * H}, {4 * H}} {
				c.in = append(c.in, in(rng, kernels.F32, f32(rng, -0.6, 0.6, s...), true))
			}
		}
		c.in = append(c.in, in(rng, kernels.F32, f32(rng, -1, 1, D, B, H), false), in(rng, kernels.F32, f32(rng, -1, 1, D, B, H), false))
		c.out = []*operand{outOperand(rng, kernels.F32, ys, dense), outOperand(rng, kernels.F32, []int{D, B, H}, dense), outOperand(rng, kernels.F32, []int{D, B, H}, dense)}
		c.tol = []tolerance{tolLSTM, tolLSTM, tolLSTM}
		c.ref = func(in []ND) []ND {
			x := in[0]
			if attr.BatchFirst {
				x = Permute(x, 1, 0, 2)
			}
			y, hN, cN := NewND(T, B, D*H), NewND(D, B, H), NewND(D, B, H)
			h0, c0 := in[1+4*D], in[2+4*D]
			for d := range D {
				w := in[1+4*d : 5+4*d]
				yd, h, cc := LSTM(x, w[0], w[1], w[2], w[3], h0.Data[d*B*H:(d+1)*B*H], c0.Data[d*B*H:(d+1)*B*H], d == 1)
				for r := range T * B {
					copy(y.Data[r*D*H+d*H:], yd.Data[r*H:(r+1)*H])
				}
				copy(hN.Data[d*B*H:], h)
				copy(cN.Data[d*B*H:], cc)
			}
			if attr.BatchFirst {
				y = Permute(y, 1, 0, 2)
			}
			return []ND{y, hN, cN}
		}
		cs = append(cs, c)
	}
	return cs
}
