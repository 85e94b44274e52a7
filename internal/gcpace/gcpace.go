// Package gcpace sets how far the Go heap of a command may grow past its
// live data before the collector runs.
//
// Go's default (GOGC=100) lets the heap reach twice the live data, and
// pages of collected garbage stay resident until the scavenger returns
// them. A Forge command's live heap is mostly tensor memory (pooled
// buffers, packed weights), so its resident size settles at about twice
// that: listen over an hour of audio went from 460 MB after its first
// minutes to a plateau of 680 MB (live heap 300–330 MB). The same memory
// is pointer-free, which the collector does not scan, so collecting more
// often costs next to nothing there: at GOGC=25 that hour plateaued at
// 460 MB with GC at 0 % of CPU time either way, and say over 1,500 words
// took the same CPU time (356 vs 358 s) and peaked 9 % lower.
//
// A command's first seconds are different: its heap fills with data that
// lives as long as it does (weights, the tokenizer, pooled buffers), the
// collections a low GOGC triggers on the way find little to free, and
// their work, and the pages they hand back only to fault them in again,
// cost the start. So a command runs at Go's default pace for its first
// settleAfter, and at Percent from then on. On the 2-core Intel VM
// (family 6 model 207), 3 interleaved rounds against Percent from the
// start:
//   - `listen --model tiny` on jfk.wav: 0.29–0.34 s against 0.37–0.44 s,
//     with the same peak RSS (~128 MiB);
//   - `say "Button."`: 0.64–0.76 s against 0.72–0.87 s;
//   - base and say's 30-word paragraph: within their spread, peak RSS
//     the same (the paragraph) or 1–13 MiB higher (base, 208–214 MiB);
//   - listen over an hour of audio (scripts/soak): RSS max 317 against
//     325 MiB, 70 against 75 s.
package gcpace

import (
	"os"
	"runtime/debug"
	"time"
)

// Percent is the GOGC the commands settle at unless the environment sets
// one.
const Percent = 25

// settleAfter is how long a command runs at Go's default pace before
// Percent: about its start (models loaded and warmed, a short file
// transcribed or a sentence spoken); a long run's plateau is minutes away.
// With 5 s the hour of listen peaked 14 MiB higher (340 MiB) before
// settling; with 2 s it did not.
const settleAfter = 2 * time.Second

// Apply sets the collector's target to Percent once the command has run
// settleAfter, unless $GOGC is set: a user's own setting wins. Commands
// call it first thing in main.
func Apply() {
	apply(func(d time.Duration, f func()) { time.AfterFunc(d, f) })
}

// apply is Apply with the timer given: after runs f once d has passed.
func apply(after func(d time.Duration, f func())) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	after(settleAfter, func() { debug.SetGCPercent(Percent) })
}
