//go:build unix

package dirstore

import "syscall"

// errNotDir is what opening "a/b" gives when "a" is a file: no object.
var errNotDir error = syscall.ENOTDIR
