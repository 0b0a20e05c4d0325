package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file is the raw-TCP harness of the proxy's protocol tests: a scripted
// upstream (scriptedUpstream) whose every connection the test drives by hand,
// byte for byte, and raw client sockets (rawClient) in front of the real proxy
// and its real http.Server. Nothing waits on a clock: each step waits for an
// event (bytes arrived, a connection accepted, a connection closed), bounded by
// waitLimit.

// scriptedUpstream is a loopback listener whose accepted connections go to the
// test as peers, to be scripted: read what the proxy sent, write what the test
// chooses when it chooses.
type scriptedUpstream struct {
	url   string
	conns chan *peer
}

// newScriptedUpstream listens on loopback; the listener and every connection
// close when the test ends.
func newScriptedUpstream(t *testing.T) *scriptedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &scriptedUpstream{url: "http://" + ln.Addr().String(), conns: make(chan *peer, 64)}
	var mu sync.Mutex
	var all []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range all {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			all = append(all, c)
			mu.Unlock()
			u.conns <- newPeer(c)
		}
	}()
	return u
}

// accept waits for the proxy's next connection.
func (u *scriptedUpstream) accept(t *testing.T) *peer {
	t.Helper()
	return recv(t, u.conns, "an upstream connection")
}

// answerNext serves the proxy's next connection, if one comes before done is
// closed, from a goroutine of its own: it reads one request and writes
// response. The channel yields the request's bytes ("" if none came) once that
// is over.
func (u *scriptedUpstream) answerNext(response string, done <-chan struct{}) <-chan string {
	out := make(chan string, 1)
	go func() {
		select {
		case p := <-u.conns:
			req, err := p.tryReadRequest()
			if err == nil {
				_, _ = io.WriteString(p.c, response)
			}
			out <- req
		case <-done:
			out <- ""
		}
	}()
	return out
}

// noConn checks that the proxy opened no connection beyond those accepted.
func (u *scriptedUpstream) noConn(t *testing.T) {
	t.Helper()
	select {
	case p := <-u.conns:
		t.Fatalf("unexpected upstream connection; it received %q", p.received())
	default:
	}
}

// peer is one end of a raw connection: a goroutine logs every byte that
// arrives; the test reads messages out of that log and writes what it likes.
type peer struct {
	c net.Conn

	mu     sync.Mutex
	log    []byte // every byte received so far
	taken  int    // how much of log the test has read as messages
	err    error  // why reading ended (io.EOF: the other side closed)
	notify chan struct{}
	ended  chan struct{} // closed when reading ended
}

func newPeer(c net.Conn) *peer {
	p := &peer{c: c, notify: make(chan struct{}, 1), ended: make(chan struct{})}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			p.mu.Lock()
			p.log = append(p.log, buf[:n]...)
			if err != nil {
				p.err = err
			}
			p.mu.Unlock()
			select {
			case p.notify <- struct{}{}:
			default:
			}
			if err != nil {
				close(p.ended)
				return
			}
		}
	}()
	return p
}

// received returns every byte received so far.
func (p *peer) received() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.log)
}

// write sends s as it is.
func (p *peer) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(p.c, s); err != nil {
		t.Fatalf("writing %q: %v", clipString(s), err)
	}
}

// next waits until parse accepts the bytes not yet taken, then takes what it
// consumed. parse returns errIncomplete while it needs more bytes; ended tells it
// that no more will come.
func (p *peer) next(t *testing.T, what string, parse func(b []byte, ended bool) (int, error)) string {
	t.Helper()
	msg, err := p.tryNext(what, parse)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// tryNext is next, with failures returned (for goroutines other than the test's).
func (p *peer) tryNext(what string, parse func(b []byte, ended bool) (int, error)) (string, error) {
	for {
		p.mu.Lock()
		rest, ended, rerr := p.log[p.taken:], p.err != nil, p.err
		n, err := parse(rest, ended)
		if err == nil {
			msg := string(rest[:n])
			p.taken += n
			p.mu.Unlock()
			return msg, nil
		}
		p.mu.Unlock()
		if !errors.Is(err, errIncomplete) {
			return "", fmt.Errorf("%s: %v in %q", what, err, clipString(string(rest)))
		}
		if ended {
			return "", fmt.Errorf("%s: the connection ended (%v) after %q", what, rerr, clipString(string(rest)))
		}
		select {
		case <-p.notify:
		case <-time.After(waitLimit):
			return "", fmt.Errorf("waiting for %s: nothing came after %q", what, clipString(string(rest)))
		}
	}
}

// errIncomplete says a message is not all there yet.
var errIncomplete = errors.New("incomplete message")

// readRequest waits for the next whole request (head and body, as its framing
// says) and returns its bytes.
func (p *peer) readRequest(t *testing.T) string {
	t.Helper()
	msg, err := p.tryReadRequest()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// tryReadRequest is readRequest, with failures returned.
func (p *peer) tryReadRequest() (string, error) {
	return p.tryNext("a request", func(b []byte, _ bool) (int, error) {
		br := bufio.NewReaderSize(bytes.NewReader(b), len(b)+16)
		req, err := http.ReadRequest(br)
		if err != nil {
			return 0, incompleteOr(err)
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return 0, incompleteOr(err)
		}
		return len(b) - br.Buffered(), nil
	})
}

// readResponse waits for the next whole response (an interim one included) to a
// request with method and returns it parsed, its body, and its raw bytes.
func (p *peer) readResponse(t *testing.T, method string) (*http.Response, string, string) {
	t.Helper()
	var resp *http.Response
	var body []byte
	raw := p.next(t, "a response", func(b []byte, ended bool) (int, error) {
		br := bufio.NewReaderSize(bytes.NewReader(b), len(b)+16)
		r, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return 0, incompleteOr(err)
		}
		untilEOF := r.ContentLength < 0 && len(r.TransferEncoding) == 0 && method != "HEAD" &&
			r.StatusCode >= 200 && r.StatusCode != http.StatusNoContent && r.StatusCode != http.StatusNotModified
		if untilEOF && !ended {
			return 0, errIncomplete // the body runs to the end of the connection
		}
		bb, err := io.ReadAll(r.Body)
		if err != nil {
			return 0, incompleteOr(err)
		}
		resp, body = r, bb
		return len(b) - br.Buffered(), nil
	})
	return resp, string(body), raw
}

// incompleteOr maps a parse error caused by missing bytes to errIncomplete.
func incompleteOr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errIncomplete
	}
	return err
}

// waitClosed waits until the other side closed the connection and returns every
// byte received.
func (p *peer) waitClosed(t *testing.T) string {
	t.Helper()
	recv(t, p.ended, "the connection to close")
	return p.received()
}

// rest returns the bytes received but not taken as messages.
func (p *peer) rest() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.log[p.taken:])
}

// isClosed reports whether the other side has closed the connection by now.
func (p *peer) isClosed() bool {
	select {
	case <-p.ended:
		return true
	default:
		return false
	}
}

// close closes this end.
func (p *peer) close() { p.c.Close() }

// rawClient is a client socket to the proxy's server: the test writes request
// bytes and reads responses as they come.
type rawClient struct{ *peer }

// dialRaw connects to the proxy at base ("http://host:port").
func dialRaw(t *testing.T, base string) rawClient {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return rawClient{newPeer(c)}
}

// send writes request bytes.
func (c rawClient) send(t *testing.T, s string) {
	t.Helper()
	c.write(t, s)
}

// exchange sends a request and waits for its response.
func (c rawClient) exchange(t *testing.T, method, s string) (*http.Response, string) {
	t.Helper()
	c.send(t, s)
	resp, body, _ := c.readResponse(t, method)
	return resp, body
}

func clipString(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
