package cpu

import (
	"math"
	"sync"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// tile is how many elements a fused expression processes per instruction:
// large enough to amortise the dispatch, small enough that all registers of
// a typical expression stay in L1 (2 KB each). Kokoro's first streamed
// audio on the benchmark paragraph, in process on 2 Zen 4 cores: 436 ms
// median at 256, 425 at 512, 443 at 1024.
const tile = 512

type scratch struct {
	r32  []float32
	src  [][]float32 // eval32: where each register is read from
	r64  []float64
	offs []int
	mem  [][]float32 // each view's buffer as float32 (nil for other dtypes)
	idx  []int       // the current row's index along the leading axes
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// fusedRun is one launch of a fused expression, split into work units of
// one tile of one output row each.
type fusedRun struct {
	e           *kernels.Expr
	out         kernels.View
	ins         []kernels.View
	bufs        []kernels.Buffer
	inner       int
	tilesPerRow int
}

// fused evaluates a kernels.Expr over every element of the output view.
func (b *Backend) fused(s *kernels.Step, bufs []kernels.Buffer) error {
	return b.fusedAlong(s, bufs, innerAxis(s))
}

// fusedAlong is fused walking axis a innermost, in tiles. Each element is
// computed alone, so the axis changes the speed, not the result: a short
// last axis (nearest upsampling's copy of [L, 2], twice as long as its
// source) would make every two elements a work unit of their own, with
// its offsets and instruction dispatch.
func (b *Backend) fusedAlong(s *kernels.Step, bufs []kernels.Buffer, a int) error {
	out, ins := s.Out[0], s.In
	n := out.Len()
	if n == 0 {
		return nil
	}
	if last := len(out.Shape) - 1; a != last {
		out = swapAxes(out, a)
		ins = make([]kernels.View, len(s.In))
		for i, v := range s.In {
			ins[i] = swapAxes(v, a)
		}
	}
	inner := out.Shape[len(out.Shape)-1]
	r := fusedRun{e: s.Expr, out: out, ins: ins, bufs: bufs, inner: inner, tilesPerRow: (inner + tile - 1) / tile}
	units := n / inner * r.tilesPerRow
	const grain = 16384 / tile
	if !b.split(units, grain) {
		r.run(0, units)
		return nil
	}
	shared := r // only the parallel path moves the run to the heap
	b.parallelFor(units, grain, func(lo, hi int) { shared.run(lo, hi) })
	return nil
}

// shortInner is the last-axis extent below which fused walks another axis
// innermost.
const shortInner = 16

// innerAxis picks the axis fused walks innermost: the last one, unless it
// is shorter than shortInner and another is at least shortInner times as
// long (then the longest such).
func innerAxis(s *kernels.Step) int {
	shape := s.Out[0].Shape
	last := len(shape) - 1
	if last < 1 || shape[last] >= shortInner {
		return last
	}
	for _, v := range s.In {
		if len(v.Shape) != len(shape) {
			return last
		}
	}
	best := last
	for a := range last {
		if shape[a] >= shortInner*shape[last] && shape[a] > shape[best] {
			best = a
		}
	}
	return best
}

// swapAxes returns v with axis a and the last axis exchanged.
func swapAxes(v kernels.View, a int) kernels.View {
	last := len(v.Shape) - 1
	v.Shape = append([]int(nil), v.Shape...)
	v.Strides = append([]int(nil), v.Strides...)
	v.Shape[a], v.Shape[last] = v.Shape[last], v.Shape[a]
	v.Strides[a], v.Strides[last] = v.Strides[last], v.Strides[a]
	return v
}

// run evaluates work units [lo, hi). The views' offsets are stepped from
// unit to unit rather than recomputed (one division and remainder per axis
// and view was most of a short unit's cost), and their buffers are looked
// up once.
func (r fusedRun) run(lo, hi int) {
	var vbuf [16]kernels.View
	views := append(vbuf[:0], r.out)
	views = append(views, r.ins...)
	e := r.e
	rank := len(r.out.Shape)
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if cap(sc.offs) < len(views) {
		sc.offs = make([]int, len(views))
		sc.mem = make([][]float32, len(views))
	}
	offs, mem := sc.offs[:len(views)], sc.mem[:len(views)]
	defer clear(mem) // do not pin the buffers in the pool
	if cap(sc.idx) < rank {
		sc.idx = make([]int, rank)
	}
	idx := sc.idx[:rank]
	if e.Wide {
		if cap(sc.r64) < e.NumRegs*tile {
			sc.r64 = make([]float64, e.NumRegs*tile)
		}
	} else {
		if cap(sc.r32) < e.NumRegs*tile {
			sc.r32 = make([]float32, e.NumRegs*tile)
		}
		if cap(sc.src) < e.NumRegs {
			sc.src = make([][]float32, e.NumRegs)
		}
		sc.src = sc.src[:e.NumRegs]
		defer clear(sc.src) // do not pin the operands in the pool
		for k, v := range views {
			mem[k] = nil
			if v.DType == kernels.F32 {
				mem[k] = f32s(r.bufs, v)
			}
		}
	}
	// rowOff[k] is view k's offset of the current row's first element:
	// idx (the row's index along axes 0 … rank−2) dotted with the strides.
	var obuf [16]int
	rowOff := obuf[:len(views)]
	row := lo / r.tilesPerRow
	for d, rr := rank-2, row; d >= 0; d-- {
		idx[d] = rr % r.out.Shape[d]
		rr /= r.out.Shape[d]
	}
	var sbuf [16]int
	lastStride := sbuf[:len(views)]
	for k := range views {
		v := &views[k]
		lastStride[k] = v.Strides[rank-1]
		rowOff[k] = v.Offset
		for d := range rank - 1 {
			rowOff[k] += idx[d] * v.Strides[d]
		}
	}
	for u := lo; u < hi; u++ {
		if u/r.tilesPerRow != row { // the next row: step idx like an odometer
			row++
			for d := rank - 2; d >= 0; d-- {
				idx[d]++
				for k := range views {
					rowOff[k] += views[k].Strides[d]
				}
				if idx[d] < r.out.Shape[d] {
					break
				}
				idx[d] = 0
				for k := range views {
					rowOff[k] -= r.out.Shape[d] * views[k].Strides[d]
				}
			}
		}
		t0 := (u % r.tilesPerRow) * tile
		cnt := min(tile, r.inner-t0)
		for k := range views {
			offs[k] = rowOff[k] + t0*lastStride[k]
		}
		if e.Wide {
			evalWide(e, views, offs, r.bufs, sc.r64, cnt)
		} else {
			eval32(e, views, offs, r.bufs, mem, sc.r32, sc.src, cnt)
		}
	}
}

// eval32 runs the expression in float32 registers over cnt elements. A
// register loaded from a dense float32 operand reads the operand's memory
// in place (src); every other instruction writes its own scratch register.
// mem holds each float32 view's buffer (nil for other dtypes).
func eval32(e *kernels.Expr, views []kernels.View, offs []int, bufs []kernels.Buffer, mem [][]float32, regs []float32, src [][]float32, cnt int) {
	reg := func(r uint16) []float32 { return src[r] }
	for _, in := range e.Code {
		// Operands are read through src before the destination is
		// redirected to its scratch (an instruction may overwrite its own
		// operand register).
		d := regs[int(in.Dst)*tile : int(in.Dst)*tile+cnt]
		switch in.Op {
		case kernels.ELoad:
			v := &views[1+in.A]
			st := v.Strides[len(v.Strides)-1]
			if m := mem[1+in.A]; m != nil && st == 1 {
				o := offs[1+in.A]
				src[in.Dst] = m[o : o+cnt : o+cnt]
				continue
			}
			load32(d, *v, offs[1+in.A], st, bufs)
		case kernels.EConst:
			vmath.Fill(d, float32(in.Imm))
		case kernels.EAdd:
			vmath.Add(d, reg(in.A), reg(in.B))
		case kernels.ESub:
			vmath.Sub(d, reg(in.A), reg(in.B))
		case kernels.EMul:
			vmath.Mul(d, reg(in.A), reg(in.B))
		case kernels.EDiv:
			vmath.Div(d, reg(in.A), reg(in.B))
		case kernels.ENeg:
			a := reg(in.A)
			for i := range d {
				d[i] = -a[i]
			}
		case kernels.EExp:
			vmath.Exp(d, reg(in.A))
		case kernels.ETanh:
			vmath.Tanh(d, reg(in.A))
		case kernels.ESigmoid:
			vmath.Sigmoid(d, reg(in.A))
		case kernels.ERelu:
			a := reg(in.A)
			for i := range d {
				x := a[i]
				if x < 0 {
					x = 0
				}
				d[i] = x
			}
		case kernels.ELeakyRelu:
			a, slope := reg(in.A), float32(in.Imm)
			for i := range d {
				x := a[i]
				if x < 0 {
					x *= slope
				}
				d[i] = x
			}
		case kernels.EGeluErf:
			vmath.GeluErf(d, reg(in.A))
		case kernels.EGeluTanh:
			// vmath.GeluTanh32 with the tanh vectorized.
			a := reg(in.A)
			if in.Dst == in.A { // a is d: keep it for the second pass
				var keep [tile]float32
				a = keep[:copy(keep[:], a)]
			}
			// tanh's argument c·(x + 0.044715·x³) as x·(c + 0.044715c·x²),
			// then ½x·(1 + tanh): vector passes over the tile, where the
			// scalar loops had been two thirds of ALBERT's GELU (Kokoro).
			const c = 0.7978845608028654
			vmath.Mul(d, a, a)
			vmath.Affine(d, d, c*0.044715, c)
			vmath.Mul(d, d, a)
			vmath.Tanh(d, d)
			vmath.Affine(d, d, 0.5, 0.5)
			vmath.Mul(d, d, a)
		case kernels.ESilu:
			a := reg(in.A)
			if in.Dst == in.A { // a is d: keep it for the product
				var keep [tile]float32
				a = keep[:copy(keep[:], a)]
			}
			vmath.Sigmoid(d, a)
			for i := range d {
				d[i] *= a[i]
			}
		case kernels.EErf:
			vmath.Erf(d, reg(in.A))
		case kernels.ESqrt:
			a := reg(in.A)
			for i := range d {
				d[i] = float32(math.Sqrt(float64(a[i])))
			}
		case kernels.ERsqrt:
			a := reg(in.A)
			for i := range d {
				d[i] = float32(1 / math.Sqrt(float64(a[i])))
			}
		case kernels.ESin:
			vmath.Sin(d, reg(in.A))
		case kernels.ECos:
			vmath.Cos(d, reg(in.A))
		case kernels.ERecip:
			a := reg(in.A)
			for i := range d {
				d[i] = 1 / a[i]
			}
		default:
			// Everything else goes through the float64 reference semantics.
			a, b, c := reg(in.A), reg(in.B), reg(in.C)
			switch in.Op.Arity() {
			case 1:
				for i := range d {
					d[i] = float32(scalar(in.Op, float64(a[i]), 0, 0, in.Imm))
				}
			case 2:
				for i := range d {
					d[i] = float32(scalar(in.Op, float64(a[i]), float64(b[i]), 0, in.Imm))
				}
			case 3:
				for i := range d {
					d[i] = float32(scalar(in.Op, float64(a[i]), float64(b[i]), float64(c[i]), in.Imm))
				}
			}
		}
		src[in.Dst] = d
	}
	if out, st := mem[0], views[0].Strides[len(views[0].Strides)-1]; out != nil && st == 1 {
		copy(out[offs[0]:offs[0]+cnt], reg(e.Result))
		return
	}
	store32(reg(e.Result), views[0], offs[0], views[0].Strides[len(views[0].Strides)-1], bufs)
}

// evalWide runs the expression in float64 registers (integer-exact up to
// 2^53) over cnt elements.
func evalWide(e *kernels.Expr, views []kernels.View, offs []int, bufs []kernels.Buffer, regs []float64, cnt int) {
	reg := func(r uint16) []float64 { return regs[int(r)*tile : int(r)*tile+cnt] }
	for _, in := range e.Code {
		d := reg(in.Dst)
		switch in.Op {
		case kernels.ELoad:
			v := views[1+in.A]
			st := v.Strides[len(v.Strides)-1]
			for i := range d {
				d[i] = loadElem(bufs, v, offs[1+in.A]+i*st)
			}
		case kernels.EConst:
			for i := range d {
				d[i] = in.Imm
			}
		default:
			a, b, c := reg(in.A), reg(in.B), reg(in.C)
			for i := range d {
				var y, z float64
				if in.Op.Arity() > 1 {
					y = b[i]
				}
				if in.Op.Arity() > 2 {
					z = c[i]
				}
				d[i] = scalar(in.Op, a[i], y, z, in.Imm)
			}
		}
	}
	out := views[0]
	st := out.Strides[len(out.Strides)-1]
	r := reg(e.Result)
	for i := range r {
		storeElem(bufs, out, offs[0]+i*st, r[i])
	}
}

// scalar is the reference meaning of every expression instruction.
func scalar(op kernels.EOp, a, b, c, imm float64) float64 {
	switch op {
	case kernels.ENeg:
		return -a
	case kernels.EAbs:
		return math.Abs(a)
	case kernels.EExp:
		return math.Exp(a)
	case kernels.ELog:
		return math.Log(a)
	case kernels.ESqrt:
		return math.Sqrt(a)
	case kernels.ERsqrt:
		return 1 / math.Sqrt(a)
	case kernels.ESin:
		return math.Sin(a)
	case kernels.ECos:
		return math.Cos(a)
	case kernels.ETanh:
		return math.Tanh(a)
	case kernels.ESigmoid:
		return 1 / (1 + math.Exp(-a))
	case kernels.ERelu:
		if a < 0 {
			return 0
		}
		return a
	case kernels.ELeakyRelu:
		if a < 0 {
			return a * imm
		}
		return a
	case kernels.EGeluErf:
		return 0.5 * a * (1 + math.Erf(a/math.Sqrt2))
	case kernels.EGeluTanh:
		return 0.5 * a * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(a+0.044715*a*a*a)))
	case kernels.ESilu:
		return a / (1 + math.Exp(-a))
	case kernels.EErf:
		return math.Erf(a)
	case kernels.EFloor:
		return math.Floor(a)
	case kernels.ECeil:
		return math.Ceil(a)
	case kernels.ERound:
		return roundEven(a)
	case kernels.ETrunc:
		return math.Trunc(a)
	case kernels.ERecip:
		return 1 / a
	case kernels.ESign:
		return sign(a)
	case kernels.EIsNaN:
		return b2f(a != a)
	case kernels.ENot:
		return b2f(a == 0)
	case kernels.ERoundF16:
		return float64(kernels.F16ToF32(kernels.F32ToF16(float32(a))))
	case kernels.ERoundBF16:
		return float64(kernels.BF16ToF32(kernels.F32ToBF16(float32(a))))
	case kernels.EAdd:
		return a + b
	case kernels.ESub:
		return a - b
	case kernels.EMul:
		return a * b
	case kernels.EDiv:
		return a / b
	case kernels.EPow:
		return math.Pow(a, b)
	case kernels.EMax:
		return nanMax(a, b)
	case kernels.EMin:
		return nanMin(a, b)
	case kernels.EMod:
		return floorMod(a, b)
	case kernels.EEq:
		return b2f(a == b)
	case kernels.ENe:
		return b2f(a != b)
	case kernels.ELt:
		return b2f(a < b)
	case kernels.ELe:
		return b2f(a <= b)
	case kernels.EGt:
		return b2f(a > b)
	case kernels.EGe:
		return b2f(a >= b)
	case kernels.EAnd:
		return b2f(a != 0 && b != 0)
	case kernels.EOr:
		return b2f(a != 0 || b != 0)
	case kernels.EWhere:
		if a != 0 {
			return b
		}
		return c
	}
	return math.NaN()
}

// load32 reads len(d) elements starting at off with stride st.
func load32(d []float32, v kernels.View, off, st int, bufs []kernels.Buffer) {
	if v.DType == kernels.F32 {
		src := f32s(bufs, v)
		switch st {
		case 1:
			copy(d, src[off:off+len(d)])
		case 0:
			vmath.Fill(d, src[off])
		default:
			for i := range d {
				d[i] = src[off+i*st]
			}
		}
		return
	}
	if v.DType == kernels.I32 { // integer GEMM results on their way to dequantization
		src := i32s(bufs, v)
		for i := range d {
			d[i] = float32(src[off+i*st])
		}
		return
	}
	for i := range d {
		d[i] = float32(loadElem(bufs, v, off+i*st))
	}
}

// store32 writes r to len(r) elements starting at off with stride st.
func store32(r []float32, v kernels.View, off, st int, bufs []kernels.Buffer) {
	if v.DType == kernels.F32 {
		dst := f32s(bufs, v)
		if st == 1 {
			copy(dst[off:off+len(r)], r)
			return
		}
		for i, x := range r {
			dst[off+i*st] = x
		}
		return
	}
	for i, x := range r {
		storeElem(bufs, v, off+i*st, float64(x))
	}
}

// loadElem reads element i of any dtype as float64.
func loadElem(bufs []kernels.Buffer, v kernels.View, i int) float64 {
	b := bytesOf(bufs, v)
	switch v.DType {
	case kernels.F32:
		return float64(f32s(bufs, v)[i])
	case kernels.F16:
		return float64(kernels.F16ToF32(u16s(bufs, v)[i]))
	case kernels.BF16:
		return float64(kernels.BF16ToF32(u16s(bufs, v)[i]))
	case kernels.I32:
		return float64(i32s(bufs, v)[i])
	case kernels.I64:
		return float64(i64s(bufs, v)[i])
	case kernels.U8, kernels.Bool:
		return float64(b[i])
	case kernels.I8:
		return float64(int8(b[i]))
	}
	return math.NaN()
}

// storeElem writes x converted to the view's dtype. Integer targets wrap
// like a C cast of the truncated value; Bool stores 1 for non-zero.
func storeElem(bufs []kernels.Buffer, v kernels.View, i int, x float64) {
	b := bytesOf(bufs, v)
	switch v.DType {
	case kernels.F32:
		f32s(bufs, v)[i] = float32(x)
	case kernels.F16:
		u16s(bufs, v)[i] = kernels.F32ToF16(float32(x))
	case kernels.BF16:
		u16s(bufs, v)[i] = kernels.F32ToBF16(float32(x))
	case kernels.I32:
		i32s(bufs, v)[i] = int32(toInt(x))
	case kernels.I64:
		i64s(bufs, v)[i] = toInt(x)
	case kernels.U8:
		b[i] = uint8(toInt(x))
	case kernels.I8:
		b[i] = uint8(int8(toInt(x)))
	case kernels.Bool:
		if x != 0 {
			b[i] = 1
		} else {
			b[i] = 0
		}
	}
}

// toInt truncates toward zero; NaN becomes 0 and out-of-range values
// saturate, so conversions are deterministic across platforms.
func toInt(x float64) int64 {
	switch {
	case x != x:
		return 0
	case x >= 9.2233720368547758e18:
		return math.MaxInt64
	case x <= -9.2233720368547758e18:
		return math.MinInt64
	}
	return int64(x)
}
