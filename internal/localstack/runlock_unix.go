//go:build unix

package localstack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockStateDir takes the state folder's run lock (flock(2) on
// <dir>/run.lock) without waiting: one `sandman run`, `stop` or `reset` at
// a time works on a folder. The lock is the kernel's, so a process killed
// hard leaves none behind. Errors: errStateDirBusy when another process
// holds it.
func lockStateDir(dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, runLockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", errStateDirBusy, dir)
		}
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}
