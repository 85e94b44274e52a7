package stage

import "time"

// The stages time themselves with a monotonic clock read as the duration
// since epoch: one clock read instead of the two time.Now makes (wall and
// monotonic), and differences are plain integer subtraction. Per-frame
// timing is the dominant cost of a pass-through stage, so this matters.
// epoch is set once at start-up and never changes.
var epoch = time.Now()

// tick is a reading of the stage clock: time since epoch.
type tick = time.Duration

// now reads the stage clock.
func now() tick { return time.Since(epoch) }

// wallAt converts a clock reading to a time.Time (with its monotonic part,
// so Sub between such times stays exact).
func wallAt(t tick) time.Time { return epoch.Add(t) }

// tickOf converts a time.Time to a clock reading.
func tickOf(t time.Time) tick { return t.Sub(epoch) }
