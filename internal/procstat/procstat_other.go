//go:build !unix

package procstat

import "time"

// PeakRSS is unknown on this platform: 0.
func PeakRSS() int64 { return 0 }

// CPUTime is unknown on this platform: 0.
func CPUTime() time.Duration { return 0 }
