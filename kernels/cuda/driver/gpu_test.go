package driver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// The tests named TestGPU* need a CUDA driver and device; without them
// they skip, saying why. On the GPU machine run the compiled test binary:
//
//	./driver.test -test.v -test.run GPU

// gpuThread loads the driver and starts a Thread on device 0, or skips.
func gpuThread(t testing.TB) (*Driver, *Thread) {
	t.Helper()
	d, err := Load()
	if err != nil {
		t.Skipf("no CUDA driver: %v", err)
	}
	th, err := d.NewThread(0)
	if err != nil {
		t.Fatalf("NewThread: %v", err)
	}
	t.Cleanup(func() {
		if err := th.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d, th
}

// smokePTX is hand-written PTX (ISA 7.8, the first with sm_90, so ptxas
// 11.8 checked it offline: `ptxas -arch=sm_90` assembles both kernels, 12
// and 10 registers) that every CUDA 12 or 13 driver JIT-compiles.
const smokePTX = `
.version 7.8
.target sm_90
.address_size 64

// vadd(const float *a, const float *b, float *c, unsigned n): c[i] = a[i] + b[i].
.visible .entry vadd(
	.param .u64 vadd_a,
	.param .u64 vadd_b,
	.param .u64 vadd_c,
	.param .u32 vadd_n
)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;

	ld.param.u64 %rd1, [vadd_a];
	ld.param.u64 %rd2, [vadd_b];
	ld.param.u64 %rd3, [vadd_c];
	ld.param.u32 %r1, [vadd_n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.u32 %r2, %r2, %r3, %r4;
	setp.ge.u32 %p, %r2, %r1;
	@%p bra DONE;
	mul.wide.u32 %rd4, %r2, 4;
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	cvta.to.global.u64 %rd3, %rd3;
	add.s64 %rd5, %rd1, %rd4;
	add.s64 %rd6, %rd2, %rd4;
	add.s64 %rd7, %rd3, %rd4;
	ld.global.f32 %f1, [%rd5];
	ld.global.f32 %f2, [%rd6];
	add.f32 %f3, %f1, %f2;
	st.global.f32 [%rd7], %f3;
DONE:
	ret;
}

// axpy(float alpha, const float *x, float *y, unsigned n): y[i] += alpha * x[i].
// The float comes first: it checks that Args puts a 4-byte value where
// the kernel reads it.
.visible .entry axpy(
	.param .f32 axpy_alpha,
	.param .u64 axpy_x,
	.param .u64 axpy_y,
	.param .u32 axpy_n
)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<6>;

	ld.param.f32 %f1, [axpy_alpha];
	ld.param.u64 %rd1, [axpy_x];
	ld.param.u64 %rd2, [axpy_y];
	ld.param.u32 %r1, [axpy_n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.u32 %r2, %r2, %r3, %r4;
	setp.ge.u32 %p, %r2, %r1;
	@%p bra DONE;
	mul.wide.u32 %rd3, %r2, 4;
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	add.s64 %rd4, %rd1, %rd3;
	add.s64 %rd5, %rd2, %rd3;
	ld.global.f32 %f2, [%rd4];
	ld.global.f32 %f3, [%rd5];
	fma.rn.f32 %f4, %f1, %f2, %f3;
	st.global.f32 [%rd5], %f4;
DONE:
	ret;
}
`

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func TestGPUDeviceInfo(t *testing.T) {
	d, th := gpuThread(t)
	info, err := d.Info(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s, CUDA %d.%d; device 0: %v, max threads/block %d, warp %d, shared opt-in %d B, L2 %d B",
		d.Path, d.Version()/1000, d.Version()%1000/10, info, info.MaxThreadsPerBlock, info.WarpSize, info.SharedPerBlockOpt, info.L2Bytes)
	if info.Name == "" || info.Major < 3 || info.SMs < 1 || info.TotalMem == 0 || info.WarpSize != 32 {
		t.Errorf("implausible device info %+v", info)
	}
	err = th.Do(func() error {
		cur, err := d.CtxGetCurrent()
		if err != nil {
			return err
		}
		if cur != th.Context() || cur == 0 {
			t.Errorf("current context %#x, want the thread's %#x", cur, th.Context())
		}
		free, total, err := d.MemGetInfo()
		if err != nil {
			return err
		}
		t.Logf("device memory: %d MiB free of %d MiB", free>>20, total>>20)
		if free > total || total == 0 {
			t.Errorf("MemGetInfo free %d total %d", free, total)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGPUMemcpyRoundTrip(t *testing.T) {
	d, th := gpuThread(t)
	for _, n := range []int{1, 4097, 3 << 20} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + 3)
		}
		err := th.Do(func() error {
			s, err := d.StreamCreate(StreamNonBlocking)
			if err != nil {
				return err
			}
			defer d.StreamDestroy(s)
			a, err := d.MemAlloc(n)
			if err != nil {
				return err
			}
			defer d.MemFree(a)
			b, err := d.MemAlloc(n)
			if err != nil {
				return err
			}
			defer d.MemFree(b)
			pinned, err := d.MemAllocHost(n)
			if err != nil {
				return err
			}
			defer d.MemFreeHost(pinned)

			// pageable → device → device → pinned
			if err := d.MemcpyHtoDAsync(a, src, s); err != nil {
				return err
			}
			if err := d.MemcpyDtoDAsync(b, a, n, s); err != nil {
				return err
			}
			if err := d.MemcpyDtoHAsync(pinned, b, s); err != nil {
				return err
			}
			if err := d.StreamSynchronize(s); err != nil {
				return err
			}
			if !bytes.Equal(pinned, src) {
				t.Errorf("n=%d: pinned copy differs", n)
			}
			// memset → pageable
			if err := d.MemsetD8Async(b, 0xA5, n, s); err != nil {
				return err
			}
			got := make([]byte, n)
			if err := d.MemcpyDtoHAsync(got, b, s); err != nil {
				return err
			}
			if err := d.StreamSynchronize(s); err != nil {
				return err
			}
			if !bytes.Equal(got, bytes.Repeat([]byte{0xA5}, n)) {
				t.Errorf("n=%d: memset copy differs", n)
			}
			done, err := d.StreamQuery(s)
			if err != nil || !done {
				t.Errorf("StreamQuery after sync = %v, %v", done, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
}

// kernels loads smokePTX on the thread and returns its two kernels.
func kernels(t *testing.T, d *Driver, th *Thread) (vadd, axpy Function) {
	t.Helper()
	var m Module
	err := th.Do(func() (err error) {
		if m, err = d.ModuleLoadData([]byte(smokePTX)); err != nil {
			return err
		}
		if vadd, err = d.ModuleGetFunction(m, "vadd"); err != nil {
			return err
		}
		axpy, err = d.ModuleGetFunction(m, "axpy")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = th.Do(func() error { return d.ModuleUnload(m) }) })
	return vadd, axpy
}

func TestGPULaunch(t *testing.T) {
	d, th := gpuThread(t)
	vadd, axpy := kernels(t, d, th)
	const n = 1_000_003 // not a multiple of the block
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = float32(i)*0.5, float32(n-i)
	}
	got := make([]byte, 4*n)
	err := th.Do(func() error {
		var p [3]DevicePtr
		for i := range p {
			var err error
			if p[i], err = d.MemAlloc(4 * n); err != nil {
				return err
			}
			defer d.MemFree(p[i])
		}
		if err := d.MemcpyHtoDAsync(p[0], f32Bytes(a), 0); err != nil {
			return err
		}
		if err := d.MemcpyHtoDAsync(p[1], f32Bytes(b), 0); err != nil {
			return err
		}
		var args Args
		grid, block := Dim3{X: (n + 255) / 256}, Dim3{X: 256}
		if err := d.Launch(vadd, grid, block, 0, 0, args.Reset().Ptr(p[0]).Ptr(p[1]).Ptr(p[2]).U32(n)); err != nil {
			return err
		}
		// c += 2·a
		if err := d.Launch(axpy, grid, block, 0, 0, args.Reset().F32(2).Ptr(p[0]).Ptr(p[2]).U32(n)); err != nil {
			return err
		}
		if err := d.MemcpyDtoHAsync(got, p[2], 0); err != nil {
			return err
		}
		return d.CtxSynchronize()
	})
	if err != nil {
		t.Fatal(err)
	}
	c := bytesF32(got)
	for i := range c {
		if want := (a[i] + b[i]) + 2*a[i]; c[i] != want {
			t.Fatalf("c[%d] = %v, want %v", i, c[i], want)
		}
	}
}

func TestGPUGraphReplay(t *testing.T) {
	d, th := gpuThread(t)
	_, axpy := kernels(t, d, th)
	const n, replays = 4096, 7
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i%17), float32(i)
	}
	got := make([]byte, 4*n)
	err := th.Do(func() error {
		s, err := d.StreamCreate(StreamNonBlocking)
		if err != nil {
			return err
		}
		defer d.StreamDestroy(s)
		px, err := d.MemAlloc(4 * n)
		if err != nil {
			return err
		}
		defer d.MemFree(px)
		py, err := d.MemAlloc(4 * n)
		if err != nil {
			return err
		}
		defer d.MemFree(py)
		if err := d.MemcpyHtoDAsync(px, f32Bytes(x), s); err != nil {
			return err
		}
		if err := d.MemcpyHtoDAsync(py, f32Bytes(y), s); err != nil {
			return err
		}
		if err := d.StreamSynchronize(s); err != nil {
			return err
		}

		// Capture y += 1·x; y += 2·x (the Args reused between the two
		// launches: the driver copied the first values when it recorded).
		if err := d.StreamBeginCapture(s, CaptureThreadLocal); err != nil {
			return err
		}
		var args Args
		for _, alpha := range []float32{1, 2} {
			if err := d.Launch(axpy, Dim3{X: n / 128}, Dim3{X: 128}, 0, s, args.Reset().F32(alpha).Ptr(px).Ptr(py).U32(n)); err != nil {
				_, _ = d.StreamEndCapture(s)
				return err
			}
		}
		g, err := d.StreamEndCapture(s)
		if err != nil {
			return err
		}
		defer d.GraphDestroy(g)
		exec, err := d.GraphInstantiate(g, 0)
		if err != nil {
			return err
		}
		defer d.GraphExecDestroy(exec)

		start, err := d.EventCreate(EventDefault)
		if err != nil {
			return err
		}
		defer d.EventDestroy(start)
		end, err := d.EventCreate(EventDefault)
		if err != nil {
			return err
		}
		defer d.EventDestroy(end)
		if err := d.EventRecord(start, s); err != nil {
			return err
		}
		for range replays {
			if err := d.GraphLaunch(exec, s); err != nil {
				return err
			}
		}
		if err := d.EventRecord(end, s); err != nil {
			return err
		}
		if err := d.EventSynchronize(end); err != nil {
			return err
		}
		if done, err := d.EventQuery(end); err != nil || !done {
			t.Errorf("EventQuery after sync = %v, %v", done, err)
		}
		ms, err := d.EventElapsedTime(start, end)
		if err != nil {
			return err
		}
		t.Logf("%d replays of a 2-kernel graph: %.1f µs on the device", replays, ms*1000)
		if ms < 0 {
			t.Errorf("elapsed %v ms", ms)
		}
		return d.MemcpyDtoHAsync(got, py, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesF32(got) {
		if want := y[i] + replays*3*x[i]; v != want {
			t.Fatalf("y[%d] = %v, want %v", i, v, want)
		}
	}
}

func TestGPUErrors(t *testing.T) {
	d, th := gpuThread(t)
	err := th.Do(func() error {
		_, err := d.ModuleLoadData([]byte(".version 7.8\n.target sm_90\nthis is not ptx"))
		var e *Error
		if !errors.As(err, &e) || e.Call != "cuModuleLoadData" || !strings.HasPrefix(e.Name, "CUDA_ERROR_") || e.Msg == "" {
			t.Errorf("bad PTX: error %v, want a named cuModuleLoadData error with the driver's text", err)
		}
		m, err := d.ModuleLoadData([]byte(smokePTX))
		if err != nil {
			return err
		}
		defer d.ModuleUnload(m)
		_, err = d.ModuleGetFunction(m, "no_such_kernel")
		if !errors.Is(err, ErrorNotFound) || !strings.Contains(err.Error(), `"no_such_kernel"`) {
			t.Errorf("missing kernel: error %v, want CUDA_ERROR_NOT_FOUND naming the kernel", err)
		}
		if _, err := d.MemAlloc(1 << 60); !errors.Is(err, ErrorOutOfMemory) {
			t.Errorf("MemAlloc(2^60): error %v, want CUDA_ERROR_OUT_OF_MEMORY", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGPULaunch measures enqueueing one kernel from the thread (no
// hop) and with a hop per launch, then a stream synchronisation.
func BenchmarkGPULaunch(b *testing.B) {
	d, th := gpuThread(b)
	var f Function
	var m Module
	if err := th.Do(func() (err error) {
		if m, err = d.ModuleLoadData([]byte(smokePTX)); err != nil {
			return err
		}
		f, err = d.ModuleGetFunction(m, "vadd")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer th.Do(func() error { return d.ModuleUnload(m) })
	var p DevicePtr
	if err := th.Do(func() (err error) { p, err = d.MemAlloc(4 * 256); return err }); err != nil {
		b.Fatal(err)
	}
	defer th.Do(func() error { return d.MemFree(p) })
	var args Args
	launch := func() error {
		return d.Launch(f, Dim3{X: 1}, Dim3{X: 256}, 0, 0, args.Reset().Ptr(p).Ptr(p).Ptr(p).U32(256))
	}
	b.Run("on-thread", func(b *testing.B) {
		b.ReportAllocs()
		if err := th.Do(func() error {
			for b.Loop() {
				if err := launch(); err != nil {
					return err
				}
			}
			return d.CtxSynchronize()
		}); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("hop-each", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := th.Do(launch); err != nil {
				b.Fatal(err)
			}
		}
		if err := th.Do(d.CtxSynchronize); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("launch+sync", func(b *testing.B) {
		if err := th.Do(func() error {
			for b.Loop() {
				if err := launch(); err != nil {
					return err
				}
				if err := d.CtxSynchronize(); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	})
}
