package listen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/tap"
)

// ErrNoToken is the error of a TCP listener without a token.
var ErrNoToken = errors.New("a TCP listener needs a bearer token; or listen on a unix socket, whose file mode decides who connects")

// Guard decides who may call a server: on a TCP listener every call must
// carry the bearer token; on a unix socket none needs one (its file mode
// decides who connects). Build it with NewGuard; it is safe for concurrent
// use, and its token can change while the server runs (SetToken).
type Guard struct {
	token atomic.Pointer[Token]
	reach atomic.Uint32 // Reach of the listener, as configured, then as bound
}

// NewGuard returns the Guard of a server that will listen on addr with
// token tok ("" for none): ErrNoToken when addr is TCP and tok is "".
func NewGuard(addr, tok string) (*Guard, error) {
	r, err := Of(addr)
	if err != nil {
		return nil, err
	}
	if r.TCP() && tok == "" {
		return nil, fmt.Errorf("%w (listen %q)", ErrNoToken, addr)
	}
	g := &Guard{}
	t := NewToken(tok)
	g.token.Store(&t)
	g.reach.Store(uint32(r))
	return g, nil
}

// Bind sets the listener actually served: ErrNoToken when it is TCP and
// there is no token, whatever the configured address said.
func (g *Guard) Bind(ln net.Listener) error {
	r := OfAddr(ln.Addr())
	if r.TCP() && !g.token.Load().Set() {
		return fmt.Errorf("%w (bound to %s)", ErrNoToken, ln.Addr())
	}
	g.reach.Store(uint32(r))
	return nil
}

// SetToken changes the token (a reload of its file): ErrNoToken for "" on
// a TCP listener.
func (g *Guard) SetToken(tok string) error {
	if tok == "" && g.tcp() {
		return ErrNoToken
	}
	t := NewToken(tok)
	g.token.Store(&t)
	return nil
}

func (g *Guard) tcp() bool { return Reach(g.reach.Load()).TCP() }

// Allows reports whether a call whose Authorization header (or
// "authorization" metadata) is authorization may proceed.
func (g *Guard) Allows(authorization string) bool {
	return !g.tcp() || g.token.Load().Matches(authorization)
}

// NeedsToken reports whether calls must carry the token: the listener is
// TCP.
func (g *Guard) NeedsToken() bool { return g.tcp() }

// Tap is the guard's check of a gRPC stream, for grpc.InTapHandle: on TCP
// a stream whose "authorization" header is not exactly one "Bearer TOKEN"
// with the token in force is refused, ErrUnauthenticated, before the gRPC
// server makes it a goroutine or reads its message. It is quick (a SHA-256
// of the header's token), as it must be: grpc calls it under its
// transport's lock.
func (g *Guard) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if g.tcp() {
		if v := info.Header["authorization"]; len(v) != 1 || !g.token.Load().Matches(v[0]) {
			return nil, ErrUnauthenticated
		}
	}
	return ctx, nil
}

// StreamCheck returns the check of a stream's calls: Allows for the
// "authorization" metadata of ctx, the stream's (fixed for its life),
// against the token in force at each call. The token's digest is matched
// again only when the token changed (SetToken), so a check costs an atomic
// load. The check is not safe for concurrent use: one per stream.
func (g *Guard) StreamCheck(ctx context.Context) func() bool {
	v := metadata.ValueFromIncomingContext(ctx, "authorization")
	var (
		checked *Token // the token ok was found for
		ok      bool
	)
	return func() bool {
		if !g.tcp() {
			return true
		}
		if t := g.token.Load(); t != checked {
			checked, ok = t, len(v) == 1 && t.Matches(v[0])
		}
		return ok
	}
}
