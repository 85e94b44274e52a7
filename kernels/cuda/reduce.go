package cuda

import (
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// supportsReduce reports whether the generator lowers a reduction.
func (b *Backend) supportsReduce(s *kernels.Step) bool {
	_, err := codegen.LowerReduce(s, codegen.CUDA)
	return err == nil && s.Out[0].Contiguous()
}

// reduce runs an OpReduce step through its generated kernel: one thread
// per output for short reductions, else one block of ReduceThreads per
// output.
func (q *queue) reduce(s *kernels.Step, bufs []kernels.Buffer) error {
	r, err := codegen.LowerReduce(s, codegen.CUDA)
	if err != nil {
		return err
	}
	if r.Outputs == 0 {
		return nil
	}
	src, err := r.Kernel.Source(codegen.CUDA)
	if err != nil {
		return err
	}
	fn, err := q.b.mods.function(r.Kernel.Name, src)
	if err != nil {
		return err
	}
	args := q.args.Reset().Ptr(base(bufs, s.Out[0])).Ptr(base(bufs, s.In[0])).Bytes(r.Params())
	block := uint32(codegen.ReduceThreads)
	grid := min(uint32(r.Outputs), uint32(q.b.info.SMs*16))
	if r.Kernel.PerThread {
		block = 128
		grid = min(blocks(int64(r.Outputs), 128), uint32(q.b.info.SMs*16))
	}
	return q.b.drv.Launch(fn, driver.Dim3{X: grid}, driver.Dim3{X: block}, 0, q.stream, args)
}
