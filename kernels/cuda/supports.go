package cuda

import (
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
)

// Supports implements kernels.Supporter: the steps this backend runs. The
// graph runs the others on the host (and lowers softmax and the norms into
// reductions and fused steps when their kernel is missing).
func (b *Backend) Supports(s *kernels.Step) bool {
	allF32 := func(vs []kernels.View) bool {
		for _, v := range vs {
			if v.DType != kernels.F32 {
				return false
			}
		}
		return true
	}
	isIndex := func(v kernels.View) bool { return v.DType == kernels.I32 || v.DType == kernels.I64 }
	switch s.Op {
	case kernels.OpFused:
		_, err := codegen.LowerFused(s)
		return err == nil
	case kernels.OpReduce:
		return b.supportsReduce(s)
	case kernels.OpMatMul:
		return b.blas != nil && b.blas.supports(s)
	case kernels.OpSoftmax, kernels.OpLayerNorm, kernels.OpGroupNorm, kernels.OpCumsum, kernels.OpConv1d, kernels.OpConvTranspose1d:
		return allF32(s.In) && allF32(s.Out) && (s.Op != kernels.OpGroupNorm || len(s.In[0].Shape) >= 2)
	case kernels.OpAttention:
		if !allF32(s.In) || !allF32(s.Out) || len(s.In[0].Shape) > 6 {
			return false
		}
		r := len(s.In[0].Shape)
		return s.In[0].Shape[r-1] <= 128 && s.In[2].Shape[r-1] <= 128 && (len(s.In) < 4 || len(s.In[3].Shape) == 2 || len(s.In[3].Shape) == r)
	case kernels.OpLinearQ:
		w := s.In[1]
		return s.In[0].DType == kernels.F32 && (w.DType == kernels.U8 || w.DType == kernels.I8) && len(s.In[0].Shape) == 2
	case kernels.OpGather:
		return isIndex(s.In[1])
	case kernels.OpSliceUpdate:
		return isIndex(s.In[1])
	case kernels.OpRepeatInterleave:
		return isIndex(s.In[1])
	case kernels.OpPad:
		return len(s.In[0].Shape) <= 8
	case kernels.OpLSTM:
		a, ok := s.Attr.(kernels.LSTMAttr)
		if !ok || !allF32(s.In) || !allF32(s.Out) {
			return false
		}
		x := s.In[0]
		B := x.Shape[1]
		if a.BatchFirst {
			B = x.Shape[0]
		}
		return 4*a.Hidden <= 1024*8 && 4*6*B*a.Hidden <= 48<<10
	case kernels.OpDynamicQuantize:
		return s.In[0].DType == kernels.F32
	case kernels.OpMatMulInteger:
		return len(s.In[0].Shape) == 2 && len(s.In[1].Shape) == 2
	case kernels.OpConvInteger1d:
		return len(s.In[0].Shape) == 3
	}
	return false
}
