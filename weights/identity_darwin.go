package weights

import (
	"os"
	"syscall"
)

// sysIdentity adds the inode and change time that macOS reports.
func sysIdentity(st os.FileInfo, id *fileID) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		id.Inode = uint64(s.Ino)
		id.ChangeNano = s.Ctimespec.Nano()
	}
}
