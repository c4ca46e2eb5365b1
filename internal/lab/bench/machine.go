package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a benchmark ran.
type Machine struct {
	// CPUs is the number of CPUs this process may use (nproc).
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	// MemoryBytes is MemTotal of /proc/meminfo.
	MemoryBytes int64  `json:"memory_bytes"`
	GoVersion   string `json:"go_version"`
	OSArch      string `json:"os_arch"`
	Kernel      string `json:"kernel"`
	// Java is `java -version`'s first line: DynamoDB Local's runtime.
	Java string `json:"java"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load
	// averages when the run started and ended: the machine is shared, so
	// they say how busy it was.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
}

// CurrentMachine describes this machine; what cannot be read is left empty.
func CurrentMachine(ctx context.Context) Machine {
	m := Machine{
		CPUs:      runtime.NumCPU(),
		GoVersion: runtime.Version(),
		OSArch:    runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart: LoadAverage(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = procField(b, "model name")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		kb, _ := strconv.ParseInt(strings.TrimSuffix(procField(b, "MemTotal"), " kB"), 10, 64)
		m.MemoryBytes = kb * 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(jctx, "java", "-version").CombinedOutput(); err == nil {
		m.Java, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	return m
}

// LoadAverage returns the first three fields of /proc/loadavg ("" when
// unreadable).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// procField returns the value of the first "name : value" line of a /proc
// file.
func procField(b []byte, name string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
