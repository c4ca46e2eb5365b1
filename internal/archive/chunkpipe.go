package archive

import (
	"io"
	"sync"
)

// Pack's room between the walk and the compressor: packChunks chunks of
// packChunkSize bytes (4 MiB in all).
const (
	packChunks    = 4
	packChunkSize = 1 << 20
)

// chunkPipe is io.Pipe with room: the writer fills chunks of a fixed size
// and goes on while the reader is busy, blocking only when every chunk is
// full and not yet read. Pack's walk writes into it and the compressor
// reads from it, so that the walk's system calls are made while the
// compressor works, not between its blocks (io.Pipe hands each write over
// only once it is read, and a walk writing straight into the compressor
// stops for every block it hands over). One goroutine writes and one
// reads.
type chunkPipe struct {
	full chan []byte   // chunks written, in order; closed by closeWrite
	free chan []byte   // chunks read, to fill again
	done chan struct{} // closed by closeRead: the reader stopped
	once sync.Once

	cur  []byte // the writer's chunk being filled
	werr error  // the writer's end: set before full is closed

	chunk, unread []byte // the reader's chunk and what is left of it
	rerr          error  // why the reader stopped: set before done is closed
}

func newChunkPipe(n, size int) *chunkPipe {
	p := &chunkPipe{full: make(chan []byte, n), free: make(chan []byte, n), done: make(chan struct{})}
	for range n - 1 {
		p.free <- make([]byte, 0, size)
	}
	p.cur = make([]byte, 0, size)
	return p
}

// Write copies b into chunks, handing each full one to the reader. Errors:
// the reader's (closeRead), once it stopped.
func (p *chunkPipe) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k := copy(p.cur[len(p.cur):cap(p.cur)], b)
		p.cur, b, n = p.cur[:len(p.cur)+k], b[k:], n+k
		if len(p.cur) < cap(p.cur) {
			continue
		}
		if err := p.send(); err != nil {
			return n, err
		}
		select {
		case p.cur = <-p.free:
		case <-p.done:
			return n, p.rerr
		}
	}
	return n, nil
}

// send hands the writer's chunk to the reader.
func (p *chunkPipe) send() error {
	select {
	case p.full <- p.cur:
		return nil
	case <-p.done:
		return p.rerr
	}
}

// closeWrite hands over what is written and ends the stream: the reader
// gets io.EOF after it, or err when not nil.
func (p *chunkPipe) closeWrite(err error) {
	if len(p.cur) > 0 {
		if serr := p.send(); err == nil {
			err = serr
		}
	}
	p.werr = err
	close(p.full)
}

// Read reads what was written, in order; io.EOF or the writer's error at
// the end.
func (p *chunkPipe) Read(b []byte) (int, error) {
	for len(p.unread) == 0 {
		if p.chunk != nil {
			p.free <- p.chunk[:0] // never blocks: it holds every chunk but those in full
			p.chunk = nil
		}
		c, ok := <-p.full
		if !ok {
			if p.werr != nil {
				return 0, p.werr
			}
			return 0, io.EOF
		}
		p.chunk, p.unread = c, c
	}
	k := copy(b, p.unread)
	p.unread = p.unread[k:]
	return k, nil
}

// closeRead stops the reading: a write blocked or made after it fails with
// err. Only its first call counts.
func (p *chunkPipe) closeRead(err error) {
	p.once.Do(func() {
		p.rerr = err
		close(p.done)
	})
}
