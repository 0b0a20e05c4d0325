//go:build !unix

package probe

import (
	"errors"
	"io"
	"os"
)

// fileHandle is an open pseudoFile. Without pread(2) (Windows) it is an
// os.File, read with ReadAt; such systems have no procfs or cgroupfs, so
// the Sampler finds no source there and says so, but the package builds.
type fileHandle = *os.File

var noFile fileHandle

func openRead(path string) (fileHandle, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err // read wraps it with the path itself
		}
		return nil, err
	}
	return f, nil
}

func closeFile(f fileHandle) { f.Close() }

// readFromStart reads f from offset 0 into b in one ReadAt: a short read
// is the end of the file.
func readFromStart(f fileHandle, b []byte) (int, error) {
	n, err := f.ReadAt(b, 0)
	if err == io.EOF {
		err = nil
	}
	return n, err
}
