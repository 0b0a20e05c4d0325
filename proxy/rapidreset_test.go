package proxy

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluicehq/sluice/internal/h2raw"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestRapidReset sends 5,000 HEADERS + RST_STREAM pairs (CVE-2023-44487's
// rapid reset) over h2c, on one connection for as long as the proxy keeps it
// and then on a new one: the reset streams open at most 10 upstream
// connections; the resets are counted (Stats.ResetStreams), a connection
// that resets more than 100 streams early is closed (ResetConnections); and
// a valid request is served afterwards.
func TestRapidReset(t *testing.T) {
	const pairs = 5000
	var accepted atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	up.Listener = countingListener{up.Listener, &accepted}
	up.Config.ErrorLog = log.New(io.Discard, "", 0)
	up.Start()
	t.Cleanup(up.Close)
	px, base := startProxy(t, Params{Upstream: up.URL, Gate: testGate(t, roomyGroup)}, ServerParams{})
	addr := strings.TrimPrefix(base, "http://")
	goroutines := runtime.NumGoroutine()

	sent, conns := 0, 0
	for sent < pairs {
		c := dialH2(t, addr)
		sent += resetPairs(t, c, pairs-sent)
		c.Close()
		conns++
	}
	// Let every handler the attack started end: the upstream connections
	// any of them would open are then counted. (Each upstream connection
	// kept idle keeps its server's goroutine.)
	waitGoroutines(t, func() int { return goroutines + 20 + int(accepted.Load()) })
	waitFor(t, "the upstream to accept every idle connection", func() bool { return accepted.Load() >= int64(px.Stats().IdleConns) })
	st := px.Stats()
	t.Logf("%d pairs on %d connections: %d upstream connections; %+v", sent, conns, accepted.Load(), st)
	if n := accepted.Load(); n > 10 {
		t.Errorf("%d reset streams opened %d upstream connections, want at most 10", sent, n)
	}
	if st.ResetStreams == 0 || st.ResetConnections == 0 || st.ResetConnections != uint64(conns-1) && st.ResetConnections != uint64(conns) {
		t.Errorf("%d pairs on %d connections: ResetStreams %d, ResetConnections %d; want the resets counted, and each connection closed but maybe the last", sent, conns, st.ResetStreams, st.ResetConnections)
	}

	resp, err := newClient(t, true).Get(base + "/r")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("after the attack: %d %q", resp.StatusCode, body)
	}
}

// dialH2 opens a raw h2c connection to addr, closed when the test ends.
func dialH2(t *testing.T, addr string) *h2raw.Conn {
	t.Helper()
	c, err := h2raw.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// resetPairs sends n HEADERS + RST_STREAM pairs on c, then a PING, and waits
// for its ACK (the server has then read every pair) or the connection's end. A goroutine reads (and
// drops) what the server sends meanwhile, as a client must for the server's
// writes to go on. It stops early if the connection ends, and returns how
// many pairs it sent.
func resetPairs(t *testing.T, c *h2raw.Conn, n int) (sent int) {
	t.Helper()
	get := []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/r"}, {Name: ":authority", Value: "app"},
	}
	acked := make(chan bool, 1)
	go func() {
		for {
			f, err := c.Fr.ReadFrame()
			if err != nil {
				acked <- false
				return
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
				acked <- true
				return
			}

		}
	}()
	for ; sent < n; sent++ {
		id, err := c.Headers(true, get)
		if err == nil {
			err = c.Fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if err != nil {
			break
		}
	}
	if err := c.Fr.WritePing(false, [8]byte{'r', 'e', 's', 'e', 't'}); err == nil {
		recv(t, acked, "the PING's ACK, or the connection's end")
	}
	return sent
}

// waitFor spins (yielding) until cond holds: synchronisation on state, not a
// sleep. It fails the test if cond never holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 5_000_000 {
			t.Fatalf("never happened: %s", what)
		}
		runtime.Gosched()
	}
}

// waitGoroutines spins until at most n() goroutines run: synchronisation on
// state, for goroutines the test cannot join (the server's handlers).
func waitGoroutines(t *testing.T, n func() int) {
	t.Helper()
	for i := 0; runtime.NumGoroutine() > n(); i++ {
		if i > 5_000_000 {
			t.Fatalf("%d goroutines still run, want at most %d", runtime.NumGoroutine(), n())
		}
		runtime.Gosched()
	}
}
