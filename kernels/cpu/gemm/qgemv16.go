package gemm

import (
	"fmt"
	"math"
)

// LinearQ8Int16 is LinearQ8 with each row of A rounded to 16-bit fixed
// point — one scale per row, the row's largest magnitude at int16Max
// steps — and the products summed exactly in integers on the CPU's 8-bit
// dot-product unit (AVX512_VNNI's VPDPBUSD, 64 weight bytes an
// instruction, two per row of A: x = 256·h + l with h and l signed bytes):
//
//	C[i,j] = float32(s_i·scale · Σ_p round(A[i,p]/s_i)·(Q[j,p] − zq)),  s_i = max_p |A[i,p]| / int16Max
//
// The only rounding is A's to that grid (half a step, |A[i,·]|max/65278
// at most per element) and the result's to float32. The float32 kernel
// widens, converts and multiplies every weight byte, four instructions per
// 16 weights against one per 32 here, and is bound by that rather than by
// the memory it reads; a decoder step's logits (51,865 × 384 bytes for
// Whisper tiny) then stream at the cache's or memory's rate.
//
// Where the unit is missing, k is not a multiple of 64 or exceeds 4096
// (where a lane's exact sum could pass an int32), or a row of A holds an
// infinity or a NaN, it computes LinearQ8's float32 product instead.
func (e *Engine) LinearQ8Int16(m, n, k int, a []float32, lda int, q []byte, ldq int, signed bool, zq int32, scale float32, c []float32, ldc int) {
	checkLinearQ8("LinearQ8Int16", m, n, k, a, lda, q, ldq, signed, zq, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if !int16Dots(k) {
		e.LinearQ8(m, n, k, a, lda, q, ldq, signed, zq, scale, c, ldc)
		return
	}
	j := e.qjobs.Get().(*qgemvJob)
	if !j.quantizeRows(m, k, a, lda, signed, zq, scale) {
		e.qjobs.Put(j)
		e.LinearQ8(m, n, k, a, lda, q, ldq, signed, zq, scale, c, ldc)
		return
	}
	j.m, j.n, j.k = m, n, k
	j.q, j.ldq, j.signed = q, ldq, signed
	j.c, j.ldc = c, ldc
	j.int16 = true
	j.team.parallel(ceilDiv(n, qgemvRows), min(j.slots, e.threads, max(1, n*k/int16BytesPerWorker)))
	j.int16 = false
	j.q, j.c = nil, nil
	e.qjobs.Put(j)
}

// Int16Path names the unit LinearQ8Int16 runs on here, or "" where it
// computes in float32.
func Int16Path() string {
	if int16Dots(64) {
		return "avx512-vnni"
	}
	return ""
}

// int16Max is the largest magnitude of a row of A on the 16-bit grid: the
// largest for which x = 256·h + l with both h and l in [−128, 127] (h =
// (x + 128) >> 8).
const int16Max = 32639

// int16BytesPerWorker is the weight bytes that justify one more worker on
// a LinearQ8Int16 product. Its kernel streams the weight faster than the
// float32 one, so it is bound by memory rather than by arithmetic, and
// the split follows the bytes, not the flops (workersFor): a decoder's
// MLP weights (590 KB for Whisper tiny) take both cores of a 2-core
// machine, its 384×384 projections one.
const int16BytesPerWorker = 1 << 18

// int16Lanes is the number of 32-bit lanes of one VPDPBUSD accumulator.
const int16Lanes = 16

// quantizeRows rounds the m rows of A to the 16-bit grid into the job's
// scratch: per row the high and low bytes, the zero point's lane
// corrections and the factor s_i·scale. It reports false if a row holds an
// infinity or a NaN.
func (j *qgemvJob) quantizeRows(m, k int, a []float32, lda int, signed bool, zq int32, scale float32) bool {
	zu := zq // the zero point of the weights as unsigned bytes
	if signed {
		zu += 128
	}
	j.hl = growInt8(j.hl, 2*m*k)
	j.corr = growInt32(j.corr, m*int16Lanes)
	j.factor = growFloat64(j.factor, m)
	for i := range m {
		h := j.hl[2*i*k : (2*i+1)*k]
		l := j.hl[(2*i+1)*k : (2*i+2)*k]
		corr := j.corr[i*int16Lanes : (i+1)*int16Lanes]
		s, ok := quantizeInt16(a[i*lda:i*lda+k], h, l, corr, zu)
		if !ok {
			return false
		}
		j.factor[i] = s * float64(scale)
	}
	return true
}

// quantizeInt16 rounds x to multiples of s = max|x| / int16Max, splits each
// multiple into h and l (x/s = 256·h + l), sets corr[t] = zu·Σ x/s over the
// elements p with p mod 64 in [4t, 4t+4) (the ones VPDPBUSD's lane t
// sums) and returns s; ok is false if x holds an infinity or a NaN.
func quantizeInt16(x []float32, h, l []int8, corr []int32, zu int32) (s float64, ok bool) {
	var mx float32
	finite := true
	for _, v := range x {
		a := abs32(v)
		mx = max(mx, a)
		finite = finite && a <= math.MaxFloat32 // false for ±Inf and NaN
	}
	if !finite {
		return 0, false
	}
	clear(corr)
	if mx == 0 {
		clear(h)
		clear(l)
		return 0, true
	}
	inv := int16Max / float64(mx)
	for p, v := range x {
		xi := int32(math.RoundToEven(float64(v) * inv))
		hi := (xi + 128) >> 8
		h[p], l[p] = int8(hi), int8(xi-hi<<8)
		corr[(p>>2)%int16Lanes] += xi
	}
	for t := range corr {
		corr[t] *= zu
	}
	return float64(mx) / int16Max, true
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// int16Task is the LinearQ8Int16 form of the job's task: weight rows
// [t·qgemvRows, +qgemvRows) for every row of A.
func (j *qgemvJob) int16Task(t int) {
	r0 := t * qgemvRows
	r1 := min(j.n, r0+qgemvRows)
	q := j.q[r0*j.ldq:]
	k := j.k
	for i := range j.m {
		out := j.c[i*j.ldc+r0 : i*j.ldc+r1]
		h, l := j.hl[2*i*k:(2*i+1)*k], j.hl[(2*i+1)*k:(2*i+2)*k]
		dotsInt16(h, l, j.corr[i*int16Lanes:(i+1)*int16Lanes], q, j.ldq, j.signed, j.factor[i], out)
	}
}

// checkLinearQ8 panics, naming the product, on arguments LinearQ8 and
// LinearQ8Int16 reject.
func checkLinearQ8(name string, m, n, k int, a []float32, lda int, q []byte, ldq int, signed bool, zq int32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: %s: negative dimension m=%d n=%d k=%d", name, m, n, k))
	}
	if signed && (zq < -128 || zq > 127) || !signed && (zq < 0 || zq > 255) {
		panic(fmt.Sprintf("gemm: %s: zero point %d out of range for signed=%v", name, zq, signed))
	}
	checkLD("a", k, lda)
	checkLen("a", m, k, len(a), lda)
	checkLD("q", k, ldq)
	checkLen("q", n, k, len(q), ldq)
	checkLD("c", n, ldc)
	checkLen("c", m, n, len(c), ldc)
}

func growInt8(s []int8, n int) []int8 {
	if cap(s) < n {
		return make([]int8, n)
	}
	return s[:n]
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func growFloat64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// dotsInt16Go is dotsInt16 in Go: the same integers and the same final
// rounding, so the assembly must match it bit for bit.
func dotsInt16Go(h, l []int8, corr []int32, q []byte, ldq int, signed bool, factor float64, out []float32) {
	for r := range out {
		row := q[r*ldq : r*ldq+len(h)]
		var t int64
		for p, b := range row {
			u := int64(b)
			if signed {
				u = int64(b ^ 0x80)
			}
			t += (256*int64(h[p]) + int64(l[p])) * u
		}
		for _, c := range corr {
			t -= int64(c)
		}
		out[r] = float32(float64(t) * factor)
	}
}

// LinearQ8Int16 runs [Engine.LinearQ8Int16] on the [Default] engine.
func LinearQ8Int16(m, n, k int, a []float32, lda int, q []byte, ldq int, signed bool, zq int32, scale float32, c []float32, ldc int) {
	Default().LinearQ8Int16(m, n, k, a, lda, q, ldq, signed, zq, scale, c, ldc)
}
