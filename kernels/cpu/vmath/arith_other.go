//go:build !amd64

package vmath

func binary(op int, dst, a, b []float32)            { binaryGo(op, dst, a, b) }
func fill(dst []float32, v float32)                 { fillGo(dst, v) }
func affine(dst, src []float32, s, t float32)       { affineGo(dst, src, s, t) }
func sumF64(x []float32) float64                    { return sumF64Go(x) }
func sumSqDevF64(x []float32, mean float64) float64 { return sumSqDevF64Go(x, mean) }

func sumSqF64(x []float32) (float64, float64) { return sumSqF64Go(x) }
