package gemm

import "syscall"

// requestAMX asks Linux for permission to use the AMX tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which it grants
// per process from kernel 5.16 on.
func requestAMX() bool {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
}
