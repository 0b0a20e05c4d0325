// Package replay holds a connection whose first bytes were read already, to
// hand it on as if they had not been: the front-ends' Split (which reads an
// HTTP/2 preface to route a connection) and the proxy's HTTP/1.1 server
// (which hands an h2c or upgraded connection to net/http's) both read ahead.
package replay

import "net"

// Conn is a net.Conn whose Read returns Head first, then what the
// connection reads. It is used by one reader at a time, as a net.Conn's
// Read is; its other methods are the connection's.
type Conn struct {
	net.Conn
	// Head is what was read of the connection already and is not yet read
	// again. Conn owns it: the caller must not change it afterwards.
	Head []byte
}

// Read reads Head first, then the connection.
func (c *Conn) Read(p []byte) (int, error) {
	if len(c.Head) > 0 {
		n := copy(p, c.Head)
		c.Head = c.Head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite half-closes the connection if it can (a TCP or unix
// connection), as net/http's server does before it closes after an error;
// otherwise it does nothing and returns nil.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
