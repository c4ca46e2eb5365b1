package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// supported reports whether this platform runs the local provider.
const supported = true

// childSysProcAttr starts a sandbox child in a new session, which also makes
// it the leader of a new process group (see the package comment for why
// setsid rather than setpgid).
func childSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// signalGroup sends sig to every process in the group pgid. It returns an
// error wrapping fs.ErrNotExist when the group has no process left.
func signalGroup(pgid int, sig groupSignal) error {
	var s syscall.Signal
	switch sig {
	case sigStop:
		s = syscall.SIGSTOP
	case sigCont:
		s = syscall.SIGCONT
	case sigKill:
		s = syscall.SIGKILL
	default:
		return fmt.Errorf("signal process group %d: unknown signal %d", pgid, sig)
	}
	if pgid <= 1 {
		return fmt.Errorf("signal process group %d: refusing a group id below 2", pgid)
	}
	if err := syscall.Kill(-pgid, s); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal process group %d: %w", pgid, fs.ErrNotExist)
		}
		return fmt.Errorf("signal process group %d: %w", pgid, err)
	}
	return nil
}

// readProcStat reads /proc/<pid>/stat. It returns an error wrapping
// fs.ErrNotExist when there is no such process.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			// The process exited between open and read.
			return procStat{}, fmt.Errorf("read process %d: %w", pid, fs.ErrNotExist)
		}
		return procStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	st, err := parseProcStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return st, nil
}

// tryLock takes an exclusive flock(2) on f without blocking; it reports
// false when another open file description holds it.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, nil
	default:
		return false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
}
