package proxy

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestClientWatch drives a connection's watch as the handler and the guard
// call it: the abort runs once the client is gone and the request's context
// ended, never after a disarm, and also when the client was gone before the
// request armed it.
func TestClientWatch(t *testing.T) {
	var w clientWatch
	var aborts atomic.Int32
	abort := func() { aborts.Add(1) }

	ctx, cancel := context.WithCancel(context.Background())
	w.arm(ctx, abort)
	if !w.disarm() || aborts.Load() != 0 {
		t.Fatal("a disarm before the client went away did not stop the abort")
	}
	cancel()

	// The client goes away; the server then ends the context; the abort runs.
	ran := make(chan struct{})
	ctx, cancel = context.WithCancel(context.Background())
	w.arm(ctx, func() { close(ran) })
	w.clientGone()
	cancel()
	recv(t, ran, "the abort")
	if w.disarm() {
		t.Error("disarm after the abort reported it stopped")
	}

	// Disarmed before the context ended: that abort never runs; a later
	// request armed on the same gone connection is aborted.
	ctx1, cancel1 := context.WithCancel(context.Background())
	w.arm(ctx1, abort)
	if !w.disarm() {
		t.Fatal("disarm before the context ended did not stop the abort")
	}
	cancel1()
	ran2 := make(chan struct{})
	ctx2, cancel2 := context.WithCancel(context.Background())
	w.arm(ctx2, func() { close(ran2) })
	cancel2()
	recv(t, ran2, "the later request's abort")
	if n := aborts.Load(); n != 0 {
		t.Errorf("a disarmed abort ran %d times", n)
	}
}

// TestClientWatchWiring checks which requests NewServer's watch serves: an
// HTTP/1 request on a guarded connection, with the server's own context; not
// one whose context a middleware replaced (AfterFunc watches that one), nor
// one on an unguarded listener.
func TestClientWatchWiring(t *testing.T) {
	got := make(chan [2]bool, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		derived, cancel := context.WithCancel(r.Context())
		defer cancel()
		got <- [2]bool{clientWatchOf(r) != nil, clientWatchOf(r.WithContext(derived)) != nil}
	})
	for _, guarded := range []bool{true, false} {
		srv, err := NewServer(ServerParams{Handler: h, ErrorLog: log.New(io.Discard, "", 0)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if guarded {
			ln = GuardListener(ln, 0)
		}
		go srv.Serve(ln)
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if g := recv(t, got, "the handler's look"); g != [2]bool{guarded, false} {
			t.Errorf("guarded %v: watched %v, with a derived context %v; want %v, false", guarded, g[0], g[1], guarded)
		}
	}
}
