package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// pseudoFile is a procfs or cgroupfs file that the Sampler keeps open and
// re-reads from offset 0 with pread(2). These files regenerate their
// contents on every read from the start (seq_file resets its iterator at
// offset 0), and the path lookup of an open costs far more than the read:
// on the build VM, 15 µs to open a cgroup file against 2 µs to pread it.
//
// A read fills the buffer from offset 0 in one call and grows the buffer
// while the file fills it, so a short read is the whole file: seq_file keeps
// filling the caller's buffer until its records run out. A failed read
// (ENODEV once a cgroup is removed, ESRCH once a process is gone) closes the
// file and opens the path again once. Not safe for concurrent use.
//
// The system calls are pseudofile_unix.go's; elsewhere (Windows, where no
// procfs or cgroupfs exists to be read) pseudofile_other.go reads with
// os.File.ReadAt.
//
// A file found missing is not looked up again until the Sampler's next
// refresh closes its files: a controller or PSI that is not there now rarely
// appears within the minute, and a failed lookup costs as much as an open.
type pseudoFile struct {
	path   string
	fd     fileHandle // noFile when closed
	absent error      // the not-exist error of the last open, until closed
}

// fileSet owns the pseudoFiles of a Sampler, so that they can be closed all
// at once by Sampler.Close or, should the Sampler be dropped unclosed, by a
// cleanup that holds no reference to it.
type fileSet struct {
	files []*pseudoFile
}

func (s *fileSet) open(path string) *pseudoFile {
	f := &pseudoFile{path: path, fd: noFile}
	s.files = append(s.files, f)
	return f
}

// closeAll closes every file; each reopens at its next read.
func (s *fileSet) closeAll() {
	for _, f := range s.files {
		f.close()
	}
}

// forget closes and drops every file, for a set about to be refilled.
func (s *fileSet) forget() {
	s.closeAll()
	s.files = s.files[:0]
}

func (f *pseudoFile) close() {
	if f.fd != noFile {
		closeFile(f.fd)
		f.fd = noFile
	}
	f.absent = nil
}

// read returns the file's contents in *buf, which it may grow.
func (f *pseudoFile) read(buf *[]byte) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		if f.absent != nil {
			return nil, f.absent
		}
		if f.fd == noFile {
			fd, err := openRead(f.path)
			if err != nil {
				err := &fs.PathError{Op: "open", Path: f.path, Err: err}
				if errors.Is(err, fs.ErrNotExist) {
					f.absent = err
				}
				return nil, err
			}
			f.fd = fd
		}
		data, err := preadAll(f.fd, buf)
		if err == nil {
			return data, nil
		}
		f.close()
		if attempt > 0 || errors.Is(err, errTooLarge) {
			return nil, &fs.PathError{Op: "read", Path: f.path, Err: err}
		}
	}
}

var errTooLarge = fmt.Errorf("larger than %d bytes", maxFileSize)

// preadAll reads fd from offset 0 into *buf in one pread, growing *buf and
// starting over while the file fills it.
func preadAll(fd fileHandle, buf *[]byte) ([]byte, error) {
	if len(*buf) == 0 {
		*buf = make([]byte, 8<<10)
	}
	for {
		n, err := readFromStart(fd, *buf)
		switch {
		case err != nil:
			return nil, err
		case n < len(*buf):
			return (*buf)[:n], nil
		case len(*buf) >= maxFileSize:
			return nil, errTooLarge
		}
		*buf = make([]byte, 2*len(*buf))
	}
}

// name is the file's base name, such as "memory.max".
func (f *pseudoFile) name() string { return filepath.Base(f.path) }
