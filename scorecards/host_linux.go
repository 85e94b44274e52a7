package scorecards

func cpuModel() string { return cpuModelFromProc() }
