//go:build unix

package probe

import "syscall"

// fileHandle is an open pseudoFile: a file descriptor, read with pread(2).
type fileHandle = int

const noFile fileHandle = -1

func openRead(path string) (fileHandle, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func closeFile(fd fileHandle) { syscall.Close(fd) }

// readFromStart reads fd from offset 0 into b in one pread(2): a short
// read is the end of the file.
func readFromStart(fd fileHandle, b []byte) (int, error) {
	for {
		n, err := syscall.Pread(fd, b, 0)
		if err != syscall.EINTR {
			return n, err
		}
	}
}
