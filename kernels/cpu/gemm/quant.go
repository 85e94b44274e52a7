package gemm

import (
	"fmt"
	"math"
)

// QuantizeU8 quantizes x into dst (len(dst) ≥ len(x)) exactly as ONNX
// DynamicQuantizeLinear (and onnxruntime's CPU kernel) does, per tensor:
//
//	lo, hi = min(0, min x), max(0, max x)
//	scale  = (hi − lo) / 255, or 1 when hi == lo
//	zp     = saturate(roundHalfEven(0 − lo/scale))
//	q      = saturate(roundHalfEven(x/scale) + zp)
//
// with every step in float32 and saturation to [0, 255]. It returns an error,
// leaving dst unspecified, when x holds a NaN or an infinity: uint8 cannot
// represent them and any scale derived from them is meaningless.
func QuantizeU8(dst []uint8, x []float32) (scale float32, zeroPoint uint8, err error) {
	if len(dst) < len(x) {
		panic(fmt.Sprintf("gemm: QuantizeU8: len(dst) = %d < len(x) = %d", len(dst), len(x)))
	}
	lo, hi, bad := minMax(x)
	if bad {
		for i, v := range x {
			if v != v || math.IsInf(float64(v), 0) {
				return 0, 0, fmt.Errorf("gemm: QuantizeU8: x[%d] = %v is not finite", i, v)
			}
		}
	}
	scale = 1
	if hi != lo {
		scale = (hi - lo) / 255
	}
	zp := roundSat(0 - lo/scale)
	QuantizeU8With(dst, x, scale, zp)
	return scale, zp, nil
}

// QuantizeU8With quantizes x into dst with a given scale and zero point, as
// ONNX QuantizeLinear to uint8: q = saturate(roundHalfEven(x/scale) + zp).
// A NaN maps to 0.
func QuantizeU8With(dst []uint8, x []float32, scale float32, zeroPoint uint8) {
	quantize(dst[:len(x)], x, scale, float32(zeroPoint))
}

func quantizeGo(dst []uint8, x []float32, scale, zp float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		q := float32(math.RoundToEven(float64(v/scale))) + zp
		dst[i] = sat255(q)
	}
}

func minMaxGo(x []float32) (lo, hi float32, bad bool) {
	for _, v := range x {
		if v != v || math.IsInf(float64(v), 0) {
			bad = true
		}
		lo = min(lo, v)
		hi = max(hi, v)
	}
	return lo, hi, bad
}

// roundSat rounds half to even and saturates to [0, 255].
func roundSat(v float32) uint8 {
	return sat255(float32(math.RoundToEven(float64(v))))
}

// sat255 clamps an integral float to [0, 255]; NaN gives 0.
func sat255(v float32) uint8 {
	switch {
	case v >= 255:
		return 255
	case v > 0:
		return uint8(v)
	default:
		return 0
	}
}
