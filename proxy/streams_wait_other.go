//go:build !linux

package proxy

import "syscall"

// waitReadable returns at once where the socket cannot be peeked at: the
// pump's read waits, holding its buffer.
func waitReadable(syscall.RawConn) error { return nil }
