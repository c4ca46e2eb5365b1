package sandboxfs

import (
	"maps"
	"slices"
	"strings"
	"sync"
)

// Mem is a fake sandbox's files: absolute path → content. A snapshot, a
// fork or a create from a snapshot copies it with Clone, so a file written
// after the copy is in one and not the other. Safe for concurrent use.
type Mem struct {
	mu    sync.Mutex
	files map[string][]byte
}

// Apply carries out op on m: a write stores a copy of op.Data; a read
// returns the content and true, or false when the path does not exist
// (the command's exit is then NoFileExit).
func (m *Mem) Apply(op Op) (data []byte, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if op.Read {
		b, ok := m.files[op.Path]
		return slices.Clone(b), ok
	}
	if m.files == nil {
		m.files = map[string][]byte{}
	}
	m.files[op.Path] = slices.Clone(op.Data)
	return nil, true
}

// Run is Apply for a command line, as a fake's command API sees it: the
// output the command prints (a read's base64, an export's tar), its exit
// code, and handled=false when the line is neither a file command nor an
// archive command (ParseArchive).
func (m *Mem) Run(line string) (stdout []byte, exit int, handled bool) {
	if aop, ok := ParseArchive(line); ok {
		stdout, exit = m.runArchive(aop)
		return stdout, exit, true
	}
	op, err := Parse(line)
	if err != nil {
		return nil, 0, false
	}
	data, ok := m.Apply(op)
	switch {
	case !ok:
		return nil, NoFileExit, true
	case op.Read:
		return []byte(encode(data)), 0, true
	}
	return nil, 0, true
}

// Clone returns an independent copy of m.
func (m *Mem) Clone() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &Mem{files: make(map[string][]byte, len(m.files))}
	for p, b := range m.files {
		c.files[p] = slices.Clone(b)
	}
	return c
}

// Paths lists the files under the folder dir ("/" for all), sorted.
func (m *Mem) Paths(dir string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []string
	for _, p := range slices.Sorted(maps.Keys(m.files)) {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// Size is the bytes m holds, for a snapshot's size.
func (m *Mem) Size() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, b := range m.files {
		n += int64(len(b))
	}
	return n
}

// Without returns a copy of m without the files at paths, nor under them
// as folders (a fake's partial workspace).
func (m *Mem) Without(paths ...string) *Mem {
	c := m.Clone()
	for p := range c.files {
		for _, gone := range paths {
			if p == gone || strings.HasPrefix(p, strings.TrimSuffix(gone, "/")+"/") {
				delete(c.files, p)
			}
		}
	}
	return c
}
