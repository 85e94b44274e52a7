//go:build race

package gemm

// raceEnabled: under the race detector sync.Pool drops entries on purpose,
// so allocation counts say nothing about steady state.
const raceEnabled = true
