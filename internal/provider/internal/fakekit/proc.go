package fakekit

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Proc is a command a fake "runs" (it runs nothing: it reads what the line
// would do). Once booted it listens on the ports ListenPorts reads from its
// line, unless the line holds --no-listen; a line holding `exit N` exits at
// once with code N and the output "starting\nexited with N\n".
type Proc struct {
	ID        string
	Line      string // as it was sent
	Ports     []int
	StartedAt time.Time
	Exit      *int // nil while it runs
	Output    string
	NoListen  bool
}

var exitIn = regexp.MustCompile(`\bexit (\d+)`)

// StartProc starts the command id at now: sent is its line as sent, line
// the part that says what it does (sent without any wrapping the fake reads
// past, such as the start guard's script).
func StartProc(id, sent, line string, now time.Time) *Proc {
	p := &Proc{ID: id, Line: sent, Ports: ListenPorts(line, ""), StartedAt: now, NoListen: strings.Contains(line, "--no-listen")}
	if m := exitIn.FindStringSubmatch(line); m != nil {
		code, _ := strconv.Atoi(m[1])
		p.Exited(code, fmt.Sprintf("starting\nexited with %d\n", code))
	}
	return p
}

// Exited ends p with code and its output.
func (p *Proc) Exited(code int, output string) { p.Exit, p.Output = &code, output }

// Code is p's exit code, 0 while it runs.
func (p *Proc) Code() int {
	if p.Exit == nil {
		return 0
	}
	return *p.Exit
}

// Listens reports whether p answers on port at now, when a command listens
// boot after its start.
func (p *Proc) Listens(port int, now time.Time, boot time.Duration) bool {
	return p.Exit == nil && !p.NoListen && slices.Contains(p.Ports, port) && !now.Before(p.StartedAt.Add(boot))
}
