// Package permitclient is the Go client of sluice's permit service (package
// permit): it asks the daemon for a leased permit before a piece of work
// and reports the work's outcome and latency after it, so that sluice's
// limits cover work that is not an HTTP request sluice proxies. It is not
// the admin API's client: it reads and changes no settings.
//
//	c, err := permitclient.New("unix:///run/sluice/permit.sock", permitclient.Options{})
//	...
//	p, err := c.Acquire(ctx, permitclient.Request{Group: "jobs", Key: tenant})
//	var refused *permitclient.RefusedError
//	if errors.As(err, &refused) {
//		// back off for refused.RetryAfter
//	}
//	err = work()
//	p.Done(permitclient.OutcomeOf(err))
//
// A permit must be released before its lease (Permit.Lease, from the
// grant) ends; otherwise the service counts it as expired (not as the
// work's drop) and frees its slot, and Done returns ErrExpired. The client speaks gRPC (the default)
// (its Session streams, one call at a time on each, from a pool) or
// HTTP/JSON, over a unix socket or TCP (which needs the token). A Client is
// safe for concurrent use; share one per process.
package permitclient

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/outcome"
)

// Transport is the protocol a Client speaks.
type Transport uint8

const (
	// GRPC: the permitpb service over HTTP/2 (the default).
	GRPC Transport = iota
	// HTTP: the JSON API over HTTP/1.1.
	HTTP
)

// Options configures a Client; the zero value speaks gRPC without a token.
type Options struct {
	// Token is the bearer token of a TCP listener (the content of the
	// service's token file); a unix socket needs none.
	Token string
	// Transport is the protocol. Default GRPC.
	Transport Transport
	// DialTimeout bounds a connection's setup. Default 5s.
	DialTimeout time.Duration
	// MaxConns bounds the connections the HTTP transport keeps (each
	// carries one call at a time), and the idle Session streams the gRPC
	// transport keeps on its one connection. The gRPC transport opens at
	// most permitpb.MaxStreams sessions (the service's bound per
	// connection), an eighth of them kept for releases; a call beyond them
	// waits for one, as long as its context lets it. Default 256.
	MaxConns int
}

// Request asks for a permit.
type Request struct {
	// Group names the sluice group; Key the key within it (a tenant, a
	// queue), "" for none.
	Group, Key string
	// Priority is "critical", "default", "sheddable" or a level "0".."7";
	// "" is "default".
	Priority string
	// Cost is the units of the group's rate limit the work spends; 0 is the
	// group's configured cost.
	Cost int64
	// Wait bounds the wait in the group's queue (ctx's deadline does too);
	// 0 leaves the group's bound. Whole milliseconds.
	Wait time.Duration
}

// Outcome is how the work of a permit ended (the gate's own enum, see
// package internal/outcome).
type Outcome = outcome.Outcome

// The outcomes.
const (
	// Success: the work was done; its latency is a sample for sluice's law.
	Success = outcome.Success
	// Dropped: it failed in a way that signals overload (a timeout, the
	// resource refused or failed).
	Dropped = outcome.Dropped
	// Ignored: no signal (the caller gave up, the input was bad).
	Ignored = outcome.Ignored
)

// OutcomeOf is Success for a nil error, Ignored for a cancelled context and
// Dropped for anything else (a deadline exceeded included).
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case errors.Is(err, context.Canceled):
		return Ignored
	}
	return Dropped
}

// RefusedError is a permit refused by sluice, with what its proxy answers a
// refused HTTP request: the reason, the status (429 over quota, 503
// overload), when to retry and, for a rate limit, the IETF RateLimit-Policy
// and RateLimit field values.
type RefusedError struct {
	Group, Reason              string
	Status                     int
	RetryAfter                 time.Duration
	RateLimitPolicy, RateLimit string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("permitclient: group %q refused the permit (%s, %d), retry after %v", e.Group, e.Reason, e.Status, e.RetryAfter)
}

// Errors of Permit.Done.
var (
	// ErrExpired: the permit's lease had expired before Done; sluice
	// counted it as expired and freed its slot then.
	ErrExpired = errors.New("permitclient: the permit's lease had expired: sluice counted it as expired and freed its slot")
	// ErrUnknown: the service knows no such permit (a zero Permit, or the
	// service restarted).
	ErrUnknown = errors.New("permitclient: the service knows no such permit")
)

// Client talks to one permit service.
type Client struct {
	t transport
}

// transport is one protocol's calls.
type transport interface {
	acquire(ctx context.Context, r Request) (grant, error)
	// release bounds its own wait: Done has no context.
	release(id uint64, o Outcome, latency time.Duration, cost int64) error
	close() error
}

type grant struct {
	id       uint64
	group    string
	lease    time.Duration
	shadowed string
}

// New returns a Client of the service at addr: "unix:///path.sock" or
// "host:port". It does not connect until the first call.
func New(addr string, o Options) (*Client, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 256
	}
	network, address := "tcp", addr
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("permitclient: address %q: a unix socket is unix:// and an absolute path", addr)
		}
		network, address = "unix", path
	} else if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("permitclient: address %q: want \"host:port\" or \"unix:///path.sock\": %w", addr, err)
	}
	var (
		t    transport
		err  error
		sess = newSession()
	)
	switch o.Transport {
	case GRPC:
		t, err = newGRPC(network, address, sess, o)
	case HTTP:
		t = newHTTP(network, address, sess, o)
	default:
		err = fmt.Errorf("permitclient: unknown transport %d", o.Transport)
	}
	if err != nil {
		return nil, err
	}
	return &Client{t: t}, nil
}

// newSession draws the client's session (16 hexadecimal digits, sent with
// every call as permitpb.SessionHeader or permitpb.SessionKey): the
// service releases the client's permits only for it, so that another
// client holding the token cannot release them, even knowing their IDs.
func newSession() string {
	var b [8]byte
	for b == [8]byte{} { // 0 is no session
		_, _ = crand.Read(b[:]) // never fails (crypto/rand.Read's doc)
	}
	return hex.EncodeToString(b[:])
}

// Close closes the client's connections. Permits not yet released stay
// held until their leases expire.
func (c *Client) Close() error { return c.t.close() }

// Acquire asks for a permit, waiting in the group's queue for at most
// r.Wait, the group's bound and ctx's deadline. A refusal is a
// *RefusedError.
func (c *Client) Acquire(ctx context.Context, r Request) (Permit, error) {
	sent := time.Now()
	g, err := c.t.acquire(ctx, r)
	if err != nil {
		return Permit{}, err
	}
	return Permit{ID: g.id, Group: g.group, Lease: g.lease, Expires: sent.Add(g.lease), Shadowed: g.shadowed, c: c, start: time.Now()}, nil
}

// Permit is a granted permit. Release it with Done once its work is over.
// A Permit is a value: releasing one copy releases them all (a second Done
// frees nothing and returns nil).
type Permit struct {
	// ID names the permit at the service.
	ID uint64
	// Group is the group that granted it.
	Group string
	// Lease is how long the permit may be held; Expires is the latest
	// instant of the client's clock it is sure to be held until (the lease
	// counted from when the request was sent).
	Lease   time.Duration
	Expires time.Time
	// Shadowed is, for a group in shadow mode, the reason sluice would have
	// refused this permit for if it enforced ("concurrency", "rate", ...);
	// "" when it would have granted it too.
	Shadowed string

	c     *Client
	start time.Time // when the grant arrived: the work's start
}

// Done releases the permit with the work's outcome and its latency since
// the grant arrived. It returns ErrExpired when the lease had expired
// (sluice counted the permit as expired), nil for a permit already
// released.
func (p Permit) Done(o Outcome) error { return p.DoneAfter(o, time.Since(p.start)) }

// DoneAfter is Done with a latency the caller measured itself.
func (p Permit) DoneAfter(o Outcome, latency time.Duration) error {
	if p.c == nil {
		return ErrUnknown
	}
	if o > Ignored {
		return fmt.Errorf("permitclient: outcome %d: want Success, Dropped or Ignored", o)
	}
	return p.c.t.release(p.ID, o, max(latency, 0), noCost)
}

// DoneCost is DoneAfter with the work's real cost, known only now (0 to
// 1e6): sluice charges the group's rate stage the difference from what the
// grant spent (Request.Cost, else the group's rate.cost), or gives it back,
// so that costly work drains its key's quota as it should.
func (p Permit) DoneCost(o Outcome, latency time.Duration, cost int64) error {
	if p.c == nil {
		return ErrUnknown
	}
	if o > Ignored {
		return fmt.Errorf("permitclient: outcome %d: want Success, Dropped or Ignored", o)
	}
	if cost < 0 {
		return fmt.Errorf("permitclient: cost %d: want 0 or more", cost)
	}
	return p.c.t.release(p.ID, o, max(latency, 0), cost)
}

// noCost is the cost of a release that declares none.
const noCost = -1
