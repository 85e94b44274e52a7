//go:build !linux && !darwin

package scorecards

func cpuModel() string { return "" }
