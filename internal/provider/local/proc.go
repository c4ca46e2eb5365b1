package local

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// errUnsupported is New's and RunSandbox's error on platforms without /proc
// and process groups.
var errUnsupported = errors.New("the local provider needs Linux (/proc and process groups)")

// groupSignal is a signal the provider sends to a sandbox's process group.
type groupSignal int

// The signals the provider sends.
const (
	sigStop groupSignal = iota + 1 // pause
	sigCont                        // resume
	sigKill                        // kill
)

// procStat is what the provider reads from /proc/<pid>/stat (proc(5)).
type procStat struct {
	State      byte   // field 3: R, S, D, T, t, Z, X, I, ...
	PGID       int    // field 5
	StartTicks uint64 // field 22: start time after boot, clock ticks
}

// live reports whether the process can still run: a zombie or a dead task
// has exited and only waits to be reaped.
func (s procStat) live() bool { return s.State != 'Z' && s.State != 'X' && s.State != 'x' }

// stopped reports whether the process is stopped by a signal (T) or by a
// tracer (t).
func (s procStat) stopped() bool { return s.State == 'T' || s.State == 't' }

// parseProcStat parses the contents of /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may itself contain spaces and
// parentheses, so fields are counted after its last ')'.
func parseProcStat(b []byte) (procStat, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return procStat{}, errors.New("parse /proc stat: no command name")
	}
	fields := bytes.Fields(b[end+1:])
	// fields[0] is field 3 of proc(5); field n is fields[n-3].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 20", len(fields))
	}
	pgid, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat pgrp: %w", err)
	}
	start, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat starttime: %w", err)
	}
	return procStat{State: fields[0][0], PGID: pgid, StartTicks: start}, nil
}
