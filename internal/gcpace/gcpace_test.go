package gcpace

import (
	"os"
	"runtime/debug"
	"testing"
	"time"
)

func TestApply(t *testing.T) {
	tests := []struct {
		name   string
		gogc   string // "" leaves GOGC unset
		before int    // the percent in force after Apply, before its timer
		after  int    // and once the timer has run
	}{
		{"unset", "", 137, Percent}, // the test's own 137 stands for Go's default
		{"user's own", "80", 137, 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := debug.SetGCPercent(137)
			defer debug.SetGCPercent(prev)
			if tt.gogc != "" {
				t.Setenv("GOGC", tt.gogc)
			} else {
				t.Setenv("GOGC", "x") // so that the cleanup restores it
				if err := os.Unsetenv("GOGC"); err != nil {
					t.Fatal(err)
				}
			}
			var timer func()
			apply(func(d time.Duration, f func()) {
				if d != settleAfter {
					t.Errorf("timer of %v, want %v", d, settleAfter)
				}
				timer = f
			})
			if got := debug.SetGCPercent(137); got != tt.before {
				t.Errorf("GC percent %d after Apply, want %d", got, tt.before)
			}
			if timer != nil {
				timer()
			}
			if got := debug.SetGCPercent(137); got != tt.after {
				t.Errorf("GC percent %d once settled, want %d", got, tt.after)
			}
		})
	}
}
