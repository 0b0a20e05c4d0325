// Package listen opens the listeners of sluice's front-ends beside the proxy
// (the permit service, Envoy's rate limit service) and decides who may use
// them: the reach of an address (this machine over loopback, a unix socket
// whose file mode decides, or other machines) and the bearer token that a
// TCP listener requires.
//
// Addresses are "host:port" (TCP) or "unix:///absolute/path.sock", as the
// admin API's. A unix socket is created with the mode given (0660 by
// default: its owner and group), after removing a stale socket file that
// nothing listens on any more. Its name has that mode from its first
// instant, whatever the process's umask: the socket is bound in a private
// folder beside it, given its mode there and renamed into place, so no
// chmod ever follows a name that someone else could have replaced with a
// symlink. Its folder must exist (sluice run makes a missing one, 0750 for
// a 0660 socket).
//
// Everything here is safe for concurrent use.
package listen
