//go:build linux || darwin

package kokoro

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: benchmarks report it
// beside wall time because it is steadier on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
