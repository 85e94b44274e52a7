package cpu

import (
	"fmt"
	"unsafe"

	"github.com/tensorforge/forge/internal/filepages"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// Where Winograd's minimal filtering pays (kernels.ConvAttr.Winograd):
// enough channels that the products outweigh the transforms, few enough
// that the transformed weight (α/K times the size, up to 2.7×) stays
// small. Measured on the 2-core Intel VM (family 6 model 207,
// BenchmarkWinograd): Kokoro's generator shapes ran 1.5–2.1 times as fast
// as the implicit GEMM; the decoder's 1,024-channel convolution over 151
// frames did not gain. The choice depends on the weight's shape only, not
// on the frames of a call: a model's warm-up (Kokoro's runs 16 frames)
// then packs the form its real utterances use, and the pack file keeps
// it.
const (
	winogradMinChannels = 64
	winogradMaxProduct  = 512 * 512 // Cin·Cout of one group
)

// winogradConv1d runs a convolution by gemm.WinogradConv1d where the step
// allows it and it pays: stride 1, a constant weight whose taps have a
// plan, the channels above, a Go microkernel with an offset form, and the
// transforms in vector code (gemm.HasWinogradKernels: AVX-512; it was
// measured nowhere else). It reports false, doing nothing, elsewhere.
func (b *Backend) winogradConv1d(bufs []kernels.Buffer, wv kernels.View, x, bias, y []float32, N, Cin, L, Cout, K, Lout int, a kernels.ConvAttr) bool {
	G := a.Groups
	cig, cog := Cin/G, Cout/G
	e := gemm.Default()
	if !a.Winograd || a.Stride != 1 || gemm.WinogradTile(K) == 0 || min(cig, cog) < winogradMinChannels ||
		cig*cog > winogradMaxProduct || !wv.Contiguous() || !gemm.HasWinogradKernels() || e.ConvPath() == "go" {
		return false
	}
	if wb, ok := bufs[wv.Slot].(*buffer); !ok || !wb.wrapped {
		return false
	}
	shape := gemm.Conv1dShape{Cin: cig, L: L, K: K, Stride: 1, Dilation: a.Dilation, PadLeft: a.PadLeft, Lout: Lout}
	for g := 0; g < G; g++ {
		pw := b.packedWinograd(bufs, wv, g, cog, cig, K)
		groupItems(x, bias, y, N, Cin, L, Cout, Lout, G, g, func(xg, bg, yg []float32) {
			e.WinogradConv1d(pw, shape, xg, L, yg, Lout, bg)
		})
		// As implicitConv1d does: a pack read in place from the pack file
		// gives its pages back once its convolution has run.
		filepages.Release(pw.Words())
	}
	return true
}

// packedWinograd returns group g of a constant weight (wrapped memory)
// transformed and packed for gemm.WinogradConv1d, packing it on first use
// or mapping it from the pack file, as packedConv does for the direct
// form.
func (b *Backend) packedWinograd(bufs []kernels.Buffer, wv kernels.View, g, rows, cin, taps int) *gemm.WinogradWeight {
	wb := bufs[wv.Slot].(*buffer)
	key := convKey{data: uintptr(unsafe.Pointer(unsafe.SliceData(wb.b))), off: wv.Offset, group: g, rows: rows, cin: cin, taps: taps, winograd: true}
	if pw, ok := b.convW.Load(key); ok {
		return pw.(*gemm.WinogradWeight)
	}
	diskKey := func(fileOff int64) string {
		return fmt.Sprintf("winograd %d %d %d %d %d %d", fileOff, wv.Offset, g, rows, cin, taps)
	}
	from := func(words []byte) (*gemm.WinogradWeight, error) {
		return gemm.Default().WinogradFrom(rows, cin, taps, words)
	}
	pw, _ := keptPack(b, &b.convW, wb, key, diskKey, from, func() *gemm.WinogradWeight {
		depth := cin * taps
		w := f32s(bufs, wv)[wv.Offset+g*rows*depth:][:rows*depth]
		pw := gemm.Default().PackWinograd(rows, cin, taps, w)
		releasePacked(w)
		return pw
	})
	return pw
}
