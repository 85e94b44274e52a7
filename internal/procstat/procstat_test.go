package procstat

import (
	"runtime"
	"testing"
	"time"
)

func TestPeakRSSAndCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("figures checked on Linux")
	}
	if rss := PeakRSS(); rss < 1<<20 || rss > 1<<40 {
		t.Errorf("PeakRSS = %d bytes, not a plausible size", rss)
	}
	// Spinning must show up as CPU time (within a generous wall budget, so
	// a loaded machine cannot fail the test).
	before := CPUTime()
	for start := time.Now(); CPUTime()-before < 20*time.Millisecond; {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("10 s of spinning added only %v of CPU time", CPUTime()-before)
		}
	}
}
