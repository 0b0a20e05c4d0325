package probe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxFileSize bounds what fileReader reads: procfs and cgroup files are a
// page or two, mountinfo on a busy host some hundred KiB.
const maxFileSize = 4 << 20

// fileReader reads small files into one buffer it reuses, so that sampling
// does not allocate a buffer per file per tick: read opens a path for a
// one-off read (discovery), readFile re-reads a pseudoFile kept open. The
// returned bytes are valid until the next read. Not safe for concurrent use.
type fileReader struct{ buf []byte }

func (r *fileReader) read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if r.buf == nil {
		r.buf = make([]byte, 8<<10)
	}
	n := 0
	for {
		if n == len(r.buf) {
			if n >= maxFileSize {
				return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileSize)
			}
			r.buf = append(r.buf, make([]byte, n)...)
		}
		m, err := f.Read(r.buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			return r.buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readFile reads a pseudoFile into the same buffer.
func (r *fileReader) readFile(f *pseudoFile) ([]byte, error) { return f.read(&r.buf) }

// readOr reads f into the same buffer, or says why it cannot: noFile when
// f does not exist, else the error.
func (r *fileReader) readOr(f *pseudoFile, noFile string) (data []byte, why string) {
	data, err := r.readFile(f)
	switch {
	case err == nil:
		return data, ""
	case missing(err):
		return nil, noFile
	}
	return nil, err.Error()
}

// missing reports whether err says a file does not exist.
func missing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
