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
// connections; no connection carries the whole attack; a connection the
// proxy closes (ResetConnections) had more than maxEarlyResets early resets
// counted (ResetStreams); and a valid request is served afterwards.
//
// It is judged by counts, not by how fast the server runs: on a loaded
// machine net/http's server may end a connection first (GOAWAY
// ENHANCE_YOUR_CALM: its handlers fell behind and the reset streams queued),
// and then fewer handlers start and fewer resets are the proxy's to count.
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
	var ends [numEnds]int
	for sent < pairs {
		c := dialH2(t, addr)
		n, end := resetPairs(t, c, pairs-sent)
		sent += n
		ends[end]++
		c.Close()
		conns++
	}
	// Let every handler the attack started end: the upstream connections
	// any of them would open are then counted. (Each upstream connection
	// kept idle keeps its server's goroutine.)
	waitGoroutines(t, func() int { return goroutines + 20 + int(accepted.Load()) })
	waitFor(t, "the upstream to accept every idle connection", func() bool { return accepted.Load() >= int64(px.Stats().IdleConns) })
	st := px.Stats()
	t.Logf("%d pairs on %d connections (ended: %d by a close, %d by GOAWAY; %d open at the end): %d upstream connections; %+v",
		sent, conns, ends[endClosed], ends[endGoAway], ends[endOpen], accepted.Load(), st)
	if n := accepted.Load(); n > 10 {
		t.Errorf("%d reset streams opened %d upstream connections, want at most 10", sent, n)
	}
	if ends[endClosed]+ends[endGoAway] == 0 {
		t.Errorf("one connection carried all %d pairs: neither the proxy nor net/http's server ended it", sent)
	}
	// A connection closed without a GOAWAY was closed by the proxy's rule;
	// one the rule closed may have had net/http's GOAWAY first.
	if c := st.ResetConnections; c < uint64(ends[endClosed]) || c > uint64(ends[endClosed]+ends[endGoAway]) {
		t.Errorf("ResetConnections %d; want between the %d connections closed without GOAWAY and the %d that ended", c, ends[endClosed], ends[endClosed]+ends[endGoAway])
	}
	if st.ResetStreams < (maxEarlyResets+1)*st.ResetConnections {
		t.Errorf("ResetStreams %d for %d connections closed: each needs more than %d early resets", st.ResetStreams, st.ResetConnections, maxEarlyResets)
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

// How a connection of resetPairs ended.
const (
	endOpen   = iota // the PING was answered: the server read every pair and kept the connection
	endGoAway        // the server sent GOAWAY (net/http's server: ENHANCE_YOUR_CALM)
	endClosed        // the connection closed without a GOAWAY (the proxy's rule)
	numEnds
)

// resetPairs sends n HEADERS + RST_STREAM pairs on c, then a PING, and waits
// for its ACK (the server has then read every pair) or the connection's end. A goroutine reads (and
// drops) what the server sends meanwhile, as a client must for the server's
// writes to go on. It stops early if the connection ends, and returns how
// many pairs it sent and how the connection ended.
func resetPairs(t *testing.T, c *h2raw.Conn, n int) (sent, end int) {
	t.Helper()
	get := []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/r"}, {Name: ":authority", Value: "app"},
	}
	ended := make(chan int, 1)
	go func() {
		goAway := false
		for {
			f, err := c.Fr.ReadFrame()
			switch {
			case err != nil && goAway:
				ended <- endGoAway
				return
			case err != nil:
				ended <- endClosed
				return
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				goAway = true
			case *http2.PingFrame:
				if f.IsAck() && !goAway {
					ended <- endOpen
					return
				}
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
	_ = c.Fr.WritePing(false, [8]byte{'r', 'e', 's', 'e', 't'}) // if it fails, the reader sees the end
	return sent, recv(t, ended, "the PING's ACK, or the connection's end")
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
