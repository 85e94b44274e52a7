//go:build !linux && !darwin

package kokoro

import "time"

// cpuTime is unknown on this platform.
func cpuTime() time.Duration { return 0 }
