//go:build !linux && !darwin

package main

import "time"

// peakRSS is unknown on this platform.
func peakRSS() int64 { return 0 }

// cpuTime is unknown on this platform.
func cpuTime() time.Duration { return 0 }
