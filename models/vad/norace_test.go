//go:build !race

package vad_test

const raceEnabled = false
