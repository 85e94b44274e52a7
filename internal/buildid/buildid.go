// Package buildid names the code of the running binary, for files that a
// process derives from model weights and keeps for later processes (the
// Whisper silence tail, the CPU backend's packed weights): a later
// process must never read what different code wrote.
package buildid

import (
	"fmt"
	"os"
	"runtime/debug"
)

// Version identifies the running binary's code: the VCS revision it was
// built from, when it has one and no local modifications, else the
// executable file as it is now (path, size, modification time); "" when
// neither is known, and then nothing should be kept.
func Version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" && modified == "false" {
			return "vcs:" + rev
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("exe:%s:%d:%d", exe, st.Size(), st.ModTime().UnixNano())
}
