package provhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Open makes one attempt at rq whose answer is a stream (a file's bytes),
// or whose body is one: with stream set, the request's body is what stream
// yields, sent as it is read (chunked) with Content-Type contentType;
// without, rq.Body JSON-encoded as RoundTrip sends it. rq.Timeout is not
// applied: ctx bounds the whole call, the answer's stream included.
//
// A 2xx answer is returned open, its body unread: the caller reads and
// closes it. Any other answer is read in full (up to rq.MaxBody) into the
// Reply, with a nil response, for the operation to classify. Errors: a
// failure of stream itself (a read error, such as a refused archive) is
// returned as it is, wrapped with the operation's name, never as a
// provider failure; no answer at all is a transient
// *lifecycle.ProviderError, as RoundTrip's.
func Open(ctx context.Context, client *http.Client, rq Request, stream io.Reader, contentType string) (*http.Response, Reply, error) {
	var src *sourceReader
	if stream != nil {
		src = &sourceReader{r: stream}
		stream = src
	}
	req, err := newRequest(ctx, rq, stream, contentType)
	if err != nil {
		return nil, Reply{}, err
	}
	resp, err := client.Do(req)
	if serr := src.failure(); serr != nil {
		if err == nil {
			resp.Body.Close()
		}
		return nil, Reply{}, fmt.Errorf("%s: %w", Describe(rq.Op, rq.SandboxID), serr)
	}
	if err != nil {
		return nil, Reply{}, noAnswer(rq, req, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, Reply{}, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, rq.MaxBody))
	return nil, Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// sourceReader remembers the first error, other than io.EOF, of the body
// it reads, so Open can tell its caller's failure from the network's.
type sourceReader struct {
	r   io.Reader
	mu  sync.Mutex
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	}
	return n, err
}

func (s *sourceReader) failure() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// MultipartBody returns a multipart/form-data body, streamed as it is
// read: the text fields in order ({name, value} pairs), then one file part
// of form name fileField and file name fileName holding what r yields. It
// returns the body and its Content-Type (with the boundary). A failure of
// r fails the body's read with r's error. Close the body when done with
// it (an HTTP client does), so the goroutine writing it ends.
func MultipartBody(fields [][2]string, fileField, fileName string, r io.Reader) (io.ReadCloser, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, f := range fields {
				if err := mw.WriteField(f[0], f[1]); err != nil {
					return err
				}
			}
			part, err := mw.CreateFormFile(fileField, fileName)
			if err != nil {
				return err
			}
			if _, err := io.Copy(part, r); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}

// Download copies the body of resp, an answer Open returned, to w and
// closes it, returning the bytes written. Errors: w's, as they are; a body
// that breaks off is a transient *lifecycle.ProviderError.
func Download(w io.Writer, resp *http.Response, op, sandboxID string) (int64, error) {
	defer resp.Body.Close()
	dst := &sinkWriter{w: w}
	n, err := io.Copy(dst, resp.Body)
	switch {
	case dst.err != nil:
		return n, dst.err
	case err != nil:
		return n, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID,
			fmt.Errorf("the download broke off after %d bytes: %w", n, err))
	}
	return n, nil
}

// sinkWriter remembers its writer's error, so Download can tell it from
// the network's.
type sinkWriter struct {
	w   io.Writer
	err error
}

func (s *sinkWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}
