package gcpace

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestApply(t *testing.T) {
	tests := []struct {
		name string
		gogc string // "" leaves GOGC unset
		want int    // the percent in force after Apply
	}{
		{"unset", "", Percent},
		{"user's own", "80", 137}, // the runtime keeps what the test set
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
			Apply()
			if got := debug.SetGCPercent(137); got != tt.want {
				t.Errorf("GC percent %d after Apply, want %d", got, tt.want)
			}
		})
	}
}
