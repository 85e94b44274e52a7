// Package nvrtc binds NVIDIA's runtime compiler (libnvrtc) through purego,
// without cgo, so that generated CUDA C becomes PTX, or a real
// architecture's machine code (a cubin), in-process.
//
// It needs no GPU and no driver: compiling to PTX is pure host work, which
// is why CI checks every generated kernel with it (Debian's non-free
// libnvrtc11.2 package ships NVRTC 11.8, which targets up to compute_90).
//
// The library is looked up (through kernels/cuda/internal/dl, as the
// driver and cuBLASLt are) as $FORGE_NVRTC (a file name or path, alone) if
// set, else as libnvrtc.so.13, .so.12, .so.11.2 and libnvrtc.so, first
// through the dynamic loader and then in the CUDA toolkit's usual folders
// (/usr/local/cuda/lib64, /usr/local/cuda/targets/<arch>/lib).
package nvrtc
