package gemm

import (
	"fmt"
	"math"
)

// bfloat16 convolutions on AMX.
//
// A ConvWeight packed by PackConvWeightBF16 runs [Engine.Conv1d] on the AMX
// tile unit: operands rounded to bfloat16 (8 significant bits), products
// accumulated in float32 over the whole depth. It is some fifteen times
// the float32 kernel's throughput and correspondingly less exact, so it is
// for layers whose users measured that the rounding is harmless (see
// models/kokoro).
//
// The depth runs tap-major: step s = (tap k, block of 32 input channels).
// A tiles (16 output channels × 32 depth values) are packed once; the B
// tile of a step is a strided load straight from the task's input window,
// whose row for the channel pair (2c, 2c+1) holds both channels' frames
// interleaved as bfloat16 pairs: TDPBF16PS's operand layout, with the
// tap's delay a shift along the row, as in the float32 path.
//
//	for each task = (column block, range of 32-channel row pairs), in parallel
//	  fill the window: input frames as bfloat16 channel pairs
//	  for each 32-row pair, for each 32-frame column pair (in assembly)
//	    4 C tiles = Σ over steps of A tiles · B tiles
//	  copy the C block out, adding the bias

// amxRowsPerPair and amxDepth are the AMX tile geometry: C blocks of
// 32×32, 32 depth values per step.
const (
	amxRowsPerPair = 32
	amxDepth       = 32
)

// HasBF16Conv reports whether PackConvWeightBF16 can run on this machine:
// a CPU with AMX-BF16 and an OS that grants its state, or an AMD CPU with
// AVX512_BF16 (see [BF16ConvPath]).
func HasBF16Conv() bool { return BF16ConvPath() != "" }

// BF16ConvPath names the unit PackConvWeightBF16's weights run on:
// "amx-bf16" (tiles, preferred where present), "go-avx512bf16" (VDPBF16PS,
// 12×32 register tiles, on AMD's cores), or "" when the CPU has neither,
// or its VDPBF16PS is slower than float32 FMAs (Intel's cores), and
// bfloat16 would only cost accuracy.
func BF16ConvPath() string {
	if amxReady() {
		return "amx-bf16"
	}
	if k := bestBF16Kernel(); k != nil {
		return k.name
	}
	return ""
}

// PackConvWeightBF16 packs a Conv1d weight w [cout, cin, k] (one group,
// contiguous) for the bfloat16 path [BF16ConvPath] names, rounding it to
// bfloat16; nil when the machine has no bfloat16 unit.
func (e *Engine) PackConvWeightBF16(cout, cin, k int, w []float32) *ConvWeight {
	if cout <= 0 || cin <= 0 || k <= 0 {
		panic(fmt.Sprintf("gemm: PackConvWeightBF16: %d×%d×%d weight", cout, cin, k))
	}
	if len(w) < cout*cin*k {
		panic(fmt.Sprintf("gemm: PackConvWeightBF16: len(w) = %d < %d", len(w), cout*cin*k))
	}
	if !amxReady() {
		if pk := bestBF16Kernel(); pk != nil {
			return e.packConvWeightPairs(pk, cout, cin, k, w)
		}
		return nil
	}
	cw, words := e.convAMXLayout(cout, cin, k)
	cw.bf = make([]uint16, words)
	cinP, steps, mP := cw.cinP, cw.steps, roundUp(cout, amxRowsPerPair)
	for cb := 0; cb < mP/16; cb++ {
		for s := 0; s < steps; s++ {
			tap, c0 := s/(cinP/amxDepth), s%(cinP/amxDepth)*amxDepth
			tile := cw.bf[(cb*steps+s)*16*amxDepth:][:16*amxDepth]
			for r := 0; r < 16; r++ {
				co := cb*16 + r
				if co >= cout {
					break
				}
				for j := 0; j < amxDepth && c0+j < cin; j++ {
					tile[r*amxDepth+j] = toBF16(w[(co*cin+c0+j)*k+tap])
				}
			}
		}
	}
	return cw
}

// convAMXLayout is the AMX packing of a cout×cin×k weight without its
// bfloat16 words (the count returned): what PackConvWeightBF16 fills and
// ConvWeightFrom maps.
func (e *Engine) convAMXLayout(cout, cin, k int) (*ConvWeight, int) {
	cinP := roundUp(cin, amxDepth)
	steps := k * cinP / amxDepth
	cw := &ConvWeight{kern: e.convKernel(), m: cout, depth: cin * k, cin: cin, k: k, cinP: cinP, steps: steps}
	return cw, roundUp(cout, amxRowsPerPair) / 16 * steps * 16 * amxDepth
}

// toBF16 rounds to the nearest bfloat16, ties to even (quiet NaNs stay
// NaN), as the vector conversion does.
func toBF16(x float32) uint16 {
	b := math.Float32bits(x)
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}

// setupAMX lays out the window and the B offsets of an AMX call.
func (j *convJob) setupAMX(w *ConvWeight, s Conv1dShape, threads int) {
	S := s.Stride
	amax := 0
	for k := 0; k < s.K; k++ {
		amax = max(amax, floorDiv(k*s.Dilation-s.PadLeft, S))
	}
	pairs := roundUp(w.m, amxRowsPerPair) / amxRowsPerPair
	flops := 2 * w.m * w.depth * s.Lout
	// AMX is fast enough that splitting small convolutions costs more
	// than it saves.
	j.workers = max(1, min(threads, flops/(16*minFlopsPerWorker)))
	j.split(s.Lout, pairs, amxRowsPerPair, j.workers)
	j.width = roundUp(roundUp(j.colBlock, amxRowsPerPair)+amax-j.amin, 16)
	if cap(j.off) < w.steps {
		j.off = make([]int, w.steps)
	}
	j.off = j.off[:w.steps]
	blocks := w.cinP / amxDepth
	for st := 0; st < w.steps; st++ {
		tap, cb := st/blocks, st%blocks
		q := tap*s.Dilation - s.PadLeft
		a := floorDiv(q, S)
		r := q - a*S
		j.off[st] = 4 * ((cb*16*S+r)*j.width + a - j.amin)
	}
}

// amxTask runs task t of an AMX convolution (see setupAMX).
func (j *convJob) amxTask(t, slot int) {
	w, s := j.w, j.s
	col, rowTask := t%j.colTasks, t/j.colTasks
	j0 := col * j.colBlock
	nb := min(j.colBlock, s.Lout-j0)
	pairs := roundUp(w.m, amxRowsPerPair) / amxRowsPerPair
	p0 := rowTask * j.perTask
	p1 := min(pairs, p0+j.perTask)
	ldc := roundUp(nb, amxRowsPerPair)

	need := w.cinP / 2 * s.Stride * j.width
	if cap(j.bwin[slot]) < need {
		j.bwin[slot] = make([]uint32, need)
	}
	if cn := (p1 - p0) * amxRowsPerPair * ldc; cap(j.cbuf[slot]) < cn {
		j.cbuf[slot] = make([]float32, cn)
	}
	win, cbuf := j.bwin[slot][:need], j.cbuf[slot]
	j.fillWindowBF16(win, j0+j.amin)

	for pr := p0; pr < p1; pr++ {
		amxRows(&w.bf[2*pr*w.steps*16*amxDepth], &win[0], &j.off[0], w.steps, 4*s.Stride*j.width,
			&cbuf[(pr-p0)*amxRowsPerPair*ldc], 4*ldc, ldc/amxRowsPerPair)
	}
	j.writeOut(cbuf, ldc, p0*amxRowsPerPair, min(w.m, p1*amxRowsPerPair), j0, nb)
}

// fillWindowBF16 fills the bfloat16 window of a column block: row
// (c·S + r), element u, pairs channels 2c and 2c+1 at input frame
// S·(u + u0) + r, zero outside the input and past the last channel.
func (j *convJob) fillWindowBF16(win []uint32, u0 int) {
	s, W, S := j.s, j.width, j.s.Stride
	for c := 0; c < j.w.cinP/2; c++ {
		var x0, x1 []float32 // nil: a padding channel
		if 2*c < s.Cin {
			x0 = j.x[2*c*j.ldx : 2*c*j.ldx+s.L]
		}
		if 2*c+1 < s.Cin {
			x1 = j.x[(2*c+1)*j.ldx : (2*c+1)*j.ldx+s.L]
		}
		for r := 0; r < S; r++ {
			row := win[(c*S+r)*W : (c*S+r+1)*W]
			if S == 1 && len(x0) == s.L && len(x1) == s.L {
				lo := min(max(0, -u0), W)
				hi := max(lo, min(W, s.L-u0))
				clear(row[:lo])
				pairBF16(row[lo:hi], x0[u0+lo:u0+hi], x1[u0+lo:u0+hi])
				clear(row[hi:])
				continue
			}
			for u := range row {
				var v0, v1 float32
				if i := S*(u+u0) + r; i >= 0 && i < s.L {
					if len(x0) == s.L {
						v0 = x0[i]
					}
					if len(x1) == s.L {
						v1 = x1[i]
					}
				}
				row[u] = uint32(toBF16(v0)) | uint32(toBF16(v1))<<16
			}
		}
	}
}
