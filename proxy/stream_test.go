package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/sluicehq/sluice/gate"
)

// echoLines is an upstream that answers each line of the request body with
// "echo <line>" at once, while the body is still coming (full duplex).
func echoLines(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex()
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	br := bufio.NewReader(r.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		io.WriteString(w, "echo "+line)
		_ = rc.Flush()
	}
}

// TestStreamingBothWays sends a request body line by line and reads each echo
// before sending the next line: if either direction were buffered, the exchange
// would stall.
func TestStreamingBothWays(t *testing.T) {
	for _, h2c := range []bool{false, true} {
		t.Run(map[bool]string{false: "http1", true: "h2c"}[h2c], func(t *testing.T) {
			up := startUpstream(t, http.HandlerFunc(echoLines), h2c)
			adm := newFinishes(t)
			params := Params{Upstream: up.URL}
			if h2c {
				params.Protocol = ProtocolH2C
			}
			_, base := startWatched(t, adm, params, ServerParams{})
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", base+"/echo", pr)
			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := newClient(t, h2c).Do(req)
				done <- result{resp, err}
			}()
			res := recv(t, done, "the response head")
			if res.err != nil {
				t.Fatal(res.err)
			}
			defer res.resp.Body.Close()
			if want := map[bool]int{false: 1, true: 2}[h2c]; res.resp.ProtoMajor != want {
				t.Fatalf("client spoke HTTP/%d", res.resp.ProtoMajor)
			}
			br := bufio.NewReader(res.resp.Body)
			lines := make(chan string, 1)
			for i := 0; i < 5; i++ {
				msg := fmt.Sprintf("ping %d\n", i)
				if _, err := io.WriteString(pw, msg); err != nil {
					t.Fatal(err)
				}
				go func() {
					l, _ := br.ReadString('\n')
					lines <- l
				}()
				if got := recv(t, lines, "echo "+msg); got != "echo "+msg {
					t.Fatalf("got %q, want %q", got, "echo "+msg)
				}
			}
			pw.Close()
			if rest, _ := io.ReadAll(br); len(rest) != 0 {
				t.Errorf("trailing %q", rest)
			}
			if f := adm.outcome(t); f.outcome != gate.Success {
				t.Errorf("outcome %v", f.outcome)
			}
		})
	}
}

// TestStreamingResponseFlushes checks that a response the upstream sends in parts
// reaches the client part by part, with a known length and without one, over
// HTTP/1.1 and h2c.
func TestStreamingResponseFlushes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		h2c, length bool
	}{{"http1 chunked", false, false}, {"http1 length", false, true}, {"h2c", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			next := make(chan struct{})
			up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.length {
					w.Header().Set("Content-Length", "12")
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "part1,")
				w.(http.Flusher).Flush()
				<-next
				io.WriteString(w, "part2!")
			}), tc.h2c)
			params := Params{Upstream: up.URL}
			if tc.h2c {
				params.Protocol = ProtocolH2C
			}
			_, base := startProxy(t, params, ServerParams{})
			resp, err := newClient(t, tc.h2c).Get(base + "/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			first := make(chan string, 1)
			go func() {
				b := make([]byte, 6)
				_, err := io.ReadFull(resp.Body, b)
				if err != nil {
					t.Error(err)
				}
				first <- string(b)
			}()
			if got := recv(t, first, "the first part"); got != "part1," {
				t.Fatalf("first part %q", got)
			}
			close(next)
			rest, err := io.ReadAll(resp.Body)
			if err != nil || string(rest) != "part2!" {
				t.Fatalf("rest %q, %v", rest, err)
			}
		})
	}
}

func TestWebSocketUpgrade(t *testing.T) {
	up := startUpstream(t, websocket.Handler(func(ws *websocket.Conn) {
		io.Copy(ws, ws)
	}), false)
	adm := newFinishes(t)
	px, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
	ws, err := websocket.Dial("ws"+strings.TrimPrefix(base, "http")+"/chat", "", "http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if f := adm.outcome(t); f.outcome != gate.Success {
		t.Errorf("outcome %v at the upgrade", f.outcome)
	}
	for i := 0; i < 3; i++ {
		msg := fmt.Sprintf("hello %d", i)
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		var got string
		_ = ws.SetReadDeadline(time.Now().Add(waitLimit))
		if err := websocket.Message.Receive(ws, &got); err != nil || got != msg {
			t.Fatalf("received %q, %v; want %q", got, err, msg)
		}
	}
	if px.Stats().Upgrades != 1 {
		t.Errorf("stats %+v", px.Stats())
	}
	adm.noMoreFinishes(t)
}

// TestAutoProtocol checks ProtocolAuto's choice: an HTTP/2 client's plain request
// reaches an HTTP/1.1-only upstream over HTTP/1.1.
func TestAutoProtocol(t *testing.T) {
	protos := make(chan string, 1)
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { protos <- r.Proto }), false)
	_, base := startProxy(t, Params{Upstream: up.URL}, ServerParams{})
	resp, err := newClient(t, true).Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("status %d over HTTP/%d", resp.StatusCode, resp.ProtoMajor)
	}
	if p := recv(t, protos, "the upstream request"); p != "HTTP/1.1" {
		t.Errorf("upstream got %s, want HTTP/1.1", p)
	}
}

func TestUpgradeRefusedPassesThrough(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no websockets here", http.StatusBadRequest)
	}), false)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := newClient(t, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "no websockets") {
		t.Errorf("%d %q", resp.StatusCode, b)
	}
	if f := adm.outcome(t); f.outcome != gate.Ignored {
		t.Errorf("outcome %v", f.outcome)
	}
}

// TestSlowClients checks the defences against clients that stall: a head that
// never ends, a body that stops coming, a response nobody reads.
func TestSlowClients(t *testing.T) {
	t.Run("head", func(t *testing.T) {
		_, base := startProxy(t, Params{Upstream: "http://" + closedAddr(t)}, ServerParams{ReadHeaderTimeout: 100 * time.Millisecond})
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n")
		_ = conn.SetReadDeadline(time.Now().Add(waitLimit))
		_, err = io.ReadAll(conn)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the server kept a half-sent head open")
		}
	})
	t.Run("body", func(t *testing.T) {
		up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }), false)
		adm := newFinishes(t)
		_, base := startWatched(t, adm, Params{Upstream: up.URL, ClientTimeout: 100 * time.Millisecond}, ServerParams{})
		for _, framing := range []string{"Content-Length: 1000", "Content-Length: 1000000", "Transfer-Encoding: chunked"} {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\n"+framing+"\r\n\r\n")
			if strings.HasPrefix(framing, "Transfer") {
				io.WriteString(conn, "a\r\n0123456789\r\n")
			} else {
				io.WriteString(conn, "0123456789")
			}
			if f := adm.outcome(t); f.outcome != gate.Ignored {
				t.Errorf("%s: outcome %v, want ignored", framing, f.outcome)
			}
			_ = conn.SetReadDeadline(time.Now().Add(waitLimit))
			_, err = io.ReadAll(conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("%s: the connection stayed open", framing)
			}
			conn.Close()
		}
	})
	t.Run("response", func(t *testing.T) {
		big := strings.Repeat("x", 1<<20)
		up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i < 64; i++ {
				if _, err := io.WriteString(w, big); err != nil {
					return
				}
			}
		}), false)
		adm := newFinishes(t)
		_, base := startWatched(t, adm, Params{Upstream: up.URL, ClientTimeout: 100 * time.Millisecond}, ServerParams{})
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // and never read
		if f := adm.outcome(t); f.outcome != gate.Ignored {
			t.Errorf("outcome %v, want ignored", f.outcome)
		}
	})
	t.Run("huge head", func(t *testing.T) {
		_, base := startProxy(t, Params{Upstream: "http://" + closedAddr(t)}, ServerParams{MaxHeaderBytes: 4096})
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.Header.Set("X-Big", strings.Repeat("b", 16<<10))
		resp, err := newClient(t, false).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("status %d, want 431", resp.StatusCode)
		}
	})
}

// TestEarlyResponseAbandonsBody checks that an upstream that answers before
// reading the body (413 here) is answered to the client at once, without waiting
// for a body that keeps coming.
func TestEarlyResponseAbandonsBody(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex, or net/http would first try to swallow 256 KiB of body.
		_ = http.NewResponseController(w).EnableFullDuplex()
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}), false)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		// Some body, then nothing until the test ends.
		_, _ = pw.Write([]byte(strings.Repeat("x", 100<<10)))
	}()
	req, _ := http.NewRequest("POST", base+"/upload", pr)
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := newClient(t, false).Do(req)
		if err != nil {
			done <- result{0, err}
			return
		}
		resp.Body.Close()
		done <- result{resp.StatusCode, nil}
	}()
	if r := recv(t, done, "the response"); r.err != nil || r.code != http.StatusRequestEntityTooLarge {
		t.Fatalf("got %d, %v; want 413", r.code, r.err)
	}
	if f := adm.outcome(t); f.outcome != gate.Ignored {
		t.Errorf("outcome %v, want ignored", f.outcome)
	}
}

// wrappedWriter is a middleware's ResponseWriter: it hides net/http's controls
// but unwraps, as http.ResponseController expects.
type wrappedWriter struct{ http.ResponseWriter }

func (w wrappedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestWrappedWriterStillStreams runs a streaming response through a proxy
// wrapped by middleware: flushing must still reach net/http's writer.
func TestWrappedWriterStillStreams(t *testing.T) {
	next := make(chan struct{})
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first;")
		w.(http.Flusher).Flush()
		<-next
		io.WriteString(w, "second")
	}), false)
	px, err := New(Params{Upstream: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	front := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		px.ServeHTTP(wrappedWriter{w}, r)
	}), false)
	resp, err := newClient(t, false).Get(front.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make(chan string, 1)
	go func() {
		b := make([]byte, 6)
		io.ReadFull(resp.Body, b)
		first <- string(b)
	}()
	if got := recv(t, first, "the first part"); got != "first;" {
		t.Fatalf("first part %q", got)
	}
	close(next)
	if rest, _ := io.ReadAll(resp.Body); string(rest) != "second" {
		t.Fatalf("rest %q", rest)
	}
}

// TestResponseUntilClose reads a response framed by the end of the connection
// (no length, not chunked) and does not reuse that connection.
func TestResponseUntilClose(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if readReqHead(br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
		}
	})
	adm := newFinishes(t)
	px, base := startWatched(t, adm, Params{Upstream: up}, ServerParams{})
	for i := 0; i < 2; i++ {
		resp, err := newClient(t, false).Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "until the end" {
			t.Fatalf("body %q, %v", b, err)
		}
		if f := adm.outcome(t); f.outcome != gate.Success {
			t.Fatalf("outcome %v", f.outcome)
		}
	}
	if st := px.Stats(); st.IdleConns != 0 || st.Retries != 0 {
		t.Errorf("stats %+v: a close-delimited connection was kept", st)
	}
}

// TestDrainAfterEarlyAnswer checks the drain after an early answer: a client
// still sending its body gets the response, may finish sending (the rest is read
// and dropped, not reset), and then sees its connection closed cleanly.
func TestDrainAfterEarlyAnswer(t *testing.T) {
	up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}), false)
	adm := newFinishes(t)
	_, base := startWatched(t, adm, Params{Upstream: up.URL}, ServerParams{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitLimit))
	const size = 200 << 10
	io.WriteString(conn, fmt.Sprintf("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Fatalf("status %d, close %v; want 413 closing the connection", resp.StatusCode, resp.Close)
	}
	if f := adm.outcome(t); f.outcome != gate.Ignored {
		t.Errorf("outcome %v", f.outcome)
	}
	// The answer came first; now the whole body goes, and is taken.
	if _, err := conn.Write([]byte(strings.Repeat("b", size))); err != nil {
		t.Fatalf("sending the rest of the body: %v", err)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the drain: %q, %v; want a clean close", rest, err)
	}
}
