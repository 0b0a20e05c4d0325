// Package grpcclient puts a client.Client in front of gRPC calls: a unary
// and a stream client interceptor that tag each call, pass the throttle of
// its connection's target, and retry a unary call of an idempotent method
// within the Client's budget. It lives apart from package client so that a
// program that speaks HTTP only does not link gRPC.
//
//	c, _ := client.New(client.Config{Tags: client.Tags{Tenant: "acme"}})
//	conn, err := grpc.NewClient(addr,
//		grpc.WithUnaryInterceptor(grpcclient.Unary(c, grpcclient.Options{})),
//		grpc.WithStreamInterceptor(grpcclient.Stream(c)))
//
// A call refused with RESOURCE_EXHAUSTED (the client's quota) or
// UNAVAILABLE (overload, or no connection) counts as not accepted; every
// other status is an answer and counts as accepted. The wait a refusal asks
// for is its grpc-retry-pushback-ms (a negative or unreadable one: never
// retry, as gRPC's retry design says), else its retry-after, in the
// trailers sluice sends. A call the throttle drops fails with UNAVAILABLE
// and an error that wraps client.ErrDropped (errors.Is); nothing is sent.
//
// A stream is throttled when it opens and counted by its first answer (its
// headers, its first message or its end); it is never retried, since its
// messages may have been taken. Both interceptors are safe for concurrent
// use.
package grpcclient

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/client"
)

// Options of the unary interceptor.
type Options struct {
	// Idempotent reports whether a method ("/package.Service/Method") can
	// be called again without changing what it did; only those are
	// retried. Nil: none is.
	Idempotent func(method string) bool
}

// Unary returns a unary client interceptor that runs each call under c
// (see the package doc).
func Unary(c *client.Client, o Options) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		ctx = tag(ctx, c)
		idempotent := o.Idempotent != nil && o.Idempotent(method)
		opts = opts[:len(opts):len(opts)] // appends below copy
		err := c.Do(ctx, cc.Target(), idempotent, func(ctx context.Context) (client.Result, error) {
			var trailer metadata.MD
			err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Trailer(&trailer))...)
			return ResultOf(err, trailer), err
		})
		return dropStatus(err)
	}
}

// Stream returns a stream client interceptor that throttles each stream
// under c when it opens (see the package doc).
func Stream(c *client.Client) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		a, err := c.Begin(cc.Target())
		if err != nil {
			return nil, dropStatus(err)
		}
		ctx = tag(ctx, c)
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			a.End(ctx, ResultOf(err, nil), err)
			return nil, err
		}
		return &stream{ClientStream: s, ctx: ctx, a: a}, nil
	}
}

// stream counts its attempt once, at its first answer.
type stream struct {
	grpc.ClientStream
	ctx   context.Context
	a     client.Attempt
	ended atomic.Bool
}

func (s *stream) end(err error) {
	if s.ended.Swap(true) {
		return
	}
	var trailer metadata.MD
	if err != nil {
		trailer = s.ClientStream.Trailer()
	}
	s.a.End(s.ctx, ResultOf(err, trailer), err)
}

func (s *stream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	s.end(err)
	return md, err
}

func (s *stream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == io.EOF {
		s.end(nil) // the stream ended well
	} else {
		s.end(err)
	}
	return err
}

// ResultOf returns what a call's error and trailers tell of the answer:
// RESOURCE_EXHAUSTED and UNAVAILABLE are refusals (the first for the
// client's quota), DEADLINE_EXCEEDED a call that got no answer in time,
// with the wait of grpc-retry-pushback-ms (milliseconds) or retry-after
// (seconds) and the sluice-reason of the trailers.
func ResultOf(err error, trailer metadata.MD) client.Result {
	var r client.Result
	switch status.Code(err) {
	case codes.OK:
		return r
	case codes.ResourceExhausted:
		r.Refused, r.Quota = true, true
	case codes.Unavailable:
		r.Refused = true
	case codes.DeadlineExceeded:
		r.Failed = true
		return r
	default:
		return r // an answer: the backend took the call
	}
	if v := trailer.Get("sluice-reason"); len(v) > 0 {
		r.Reason = v[0]
		r.Quota = r.Quota || r.Reason == "rate"
	}
	if v := trailer.Get("grpc-retry-pushback-ms"); len(v) > 0 {
		ms, perr := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
		if perr != nil || ms < 0 {
			r.NoRetry = true
		} else {
			r.RetryAfter = time.Duration(ms) * time.Millisecond
		}
	} else if v := trailer.Get("retry-after"); len(v) > 0 {
		r.RetryAfter, _ = client.ParseRetryAfter(v[0], time.Now())
	}
	return r
}

// tag adds to ctx's outgoing metadata the tags of c that it lacks.
func tag(ctx context.Context, c *client.Client) context.Context {
	t := c.TagsOf(ctx)
	if t == (client.Tags{}) {
		return ctx
	}
	h := c.Headers()
	md, _ := metadata.FromOutgoingContext(ctx)
	var kv []string
	add := func(name, v string) {
		name = strings.ToLower(name)
		if v != "" && len(md.Get(name)) == 0 {
			kv = append(kv, name, v)
		}
	}
	add(h.Priority, string(t.Priority))
	add(h.Tenant, t.Tenant)
	if t.Cost != 0 {
		add(h.Cost, strconv.Itoa(t.Cost))
	}
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// dropStatus turns a drop into an UNAVAILABLE status that still wraps
// client.ErrDropped; other errors pass as they are.
func dropStatus(err error) error {
	var d *client.DropError
	if !errors.As(err, &d) {
		return err
	}
	return &droppedError{d: d}
}

type droppedError struct{ d *client.DropError }

func (e *droppedError) Error() string { return e.d.Error() }
func (e *droppedError) Unwrap() error { return e.d }
func (e *droppedError) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, e.d.Error())
}
