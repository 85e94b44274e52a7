package scorecards

import (
	"bufio"
	"io"
	"os"
	"runtime"
	"strings"
)

// HostFacts describes this machine: OS, architecture, CPU model where the
// system reports one, usable cores and the Go version.
func HostFacts() Host {
	return Host{
		OS:    runtime.GOOS,
		Arch:  runtime.GOARCH,
		CPU:   cpuModel(),
		Cores: runtime.NumCPU(),
		Go:    runtime.Version(),
	}
}

// cpuModelFromProc reads the CPU model from a Linux /proc/cpuinfo: "model
// name" on x86, else "Hardware" or "Model" (ARM boards); "" if none.
func cpuModelFromProc() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return parseCPUInfo(f)
}

// parseCPUInfo returns the first CPU model named in cpuinfo text.
func parseCPUInfo(r io.Reader) string {
	var fallback string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.Join(strings.Fields(val), " ")
		if val == "" {
			continue
		}
		switch key {
		case "model name":
			return val
		case "Hardware", "Model":
			if fallback == "" {
				fallback = val
			}
		}
	}
	return fallback
}
