//go:build !linux

package proxy

// hangups is the hang-up watch where there is no epoll: none, so every
// connection uses the read watch (see the Linux hangups).
type hangups struct{}

var useHangups = false

func (h *hangups) arm(*h1Conn) bool            { return false }
func (h *hangups) forget(*h1Conn)              {}
func (h *hangups) close()                      {}
func (c *h1Conn) peekGone() (gone, again bool) { return false, false }
