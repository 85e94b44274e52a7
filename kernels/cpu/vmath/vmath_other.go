//go:build !amd64

package vmath

func expSub(dst, src []float32, m float32) float32 { return expSubGo(dst, src, m) }
func maxOf(src []float32) float32                  { return maxGo(src) }
func scale(dst []float32, s float32)               { scaleGo(dst, s) }
func sigmoid(dst, src []float32)                   { sigmoidGo(dst, src) }
func tanh(dst, src []float32)                      { tanhGo(dst, src) }
func gelu(dst, src []float32)                      { geluGo(dst, src) }
func sinq(dst, src []float32, q float32)           { sinqGo(dst, src, q) }
func erf(dst, src []float32)                       { erfGo(dst, src) }
