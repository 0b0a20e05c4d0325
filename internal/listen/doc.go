// Package listen opens the listeners of sluice's front-ends beside the proxy
// (the permit service, Envoy's rate limit service) and decides who may use
// them: the reach of an address (this machine over loopback, a unix socket
// whose file mode decides, or other machines) and the bearer token that a
// TCP listener requires.
//
// Addresses are "host:port" (TCP) or "unix:///absolute/path.sock", as the
// admin API's. A unix socket is created with the mode given (0660 by
// default: its owner and group), after removing a stale socket file that
// nothing listens on any more; put it in a folder only the clients' group
// can enter, since the mode is applied just after the socket is bound.
//
// Everything here is safe for concurrent use.
package listen
