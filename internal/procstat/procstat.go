// Package procstat reads this process's resource usage: peak resident
// memory for scorecards, and CPU time, which benchmarks report beside wall
// time because it stays steady when other work shares the machine.
package procstat
