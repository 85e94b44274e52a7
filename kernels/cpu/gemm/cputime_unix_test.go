//go:build unix

package gemm

import "syscall"

// cpuSeconds is the CPU time this process has used (all threads). On a
// machine shared with other work, flops per CPU-second track the kernels'
// efficiency far more steadily than flops per wall-clock second.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)*1e-6
}
