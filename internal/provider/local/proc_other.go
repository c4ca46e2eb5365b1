//go:build !linux

package local

import (
	"os"
	"syscall"
)

// supported reports whether this platform runs the local provider.
const supported = false

func childSysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, groupSignal) error { return errUnsupported }

func readProcStat(int) (procStat, error) { return procStat{}, errUnsupported }

func tryLock(*os.File) (bool, error) { return false, errUnsupported }
