package archive

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestChunkPipe checks the bytes come out in order across chunks (writes
// smaller and larger than a chunk), then io.EOF or the writer's error.
func TestChunkPipe(t *testing.T) {
	var want bytes.Buffer
	for i := range 300 {
		want.Write(bytes.Repeat([]byte{byte(i)}, i*7))
	}
	for _, werr := range []error{nil, errors.New("walk failed")} {
		p := newChunkPipe(3, 64)
		go func() {
			b := want.Bytes()
			for i := 0; len(b) > 0; i++ {
				n := min(len(b), i%200)
				if _, err := p.Write(b[:n]); err != nil {
					t.Error(err)
				}
				b = b[n:]
			}
			p.closeWrite(werr)
		}()
		got, err := io.ReadAll(p)
		if !errors.Is(err, werr) || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("read %d bytes, %v; want the %d written, then %v", len(got), err, want.Len(), werr)
		}
	}
}

// TestChunkPipeReaderStops checks a writer blocked on full chunks gets the
// reader's error once it stops.
func TestChunkPipeReaderStops(t *testing.T) {
	p := newChunkPipe(2, 16)
	stop := errors.New("disk full")
	done := make(chan error, 1)
	go func() {
		_, err := p.Write(make([]byte, 1000))
		done <- err
	}()
	if _, err := p.Read(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	p.closeRead(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Errorf("the blocked write = %v, want %v", err, stop)
	}
	if _, err := p.Write([]byte("more than sixteen bytes, so a chunk fills")); !errors.Is(err, stop) {
		t.Errorf("a write after closeRead = %v, want %v", err, stop)
	}
}
