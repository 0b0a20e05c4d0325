// Package rawreq reads the refused-request fixtures of testdata/requests:
// raw request bytes, each with the status sluice must answer them with. The
// tests of proxy and of the real daemon send the same files.
package rawreq

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Case is one fixture file.
type Case struct {
	// Name is the file's name without ".txt".
	Name string
	// Status is the HTTP status the request must be answered with.
	Status int
	// Why says what the request does wrong.
	Why string
	// Bytes are the request exactly as sent on the wire.
	Bytes []byte
}

// Load reads every *.txt file of dir, sorted by name. A file that does not
// follow the format (README.md of testdata/requests) is an error naming it
// and its line.
func Load(dir string) ([]Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no *.txt fixtures in %s", dir)
	}
	cases := make([]Case, 0, len(paths))
	for _, p := range paths {
		c, err := parse(p)
		if err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

func parse(path string) (Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Case{}, err
	}
	c := Case{Name: strings.TrimSuffix(filepath.Base(path), ".txt")}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var raw bytes.Buffer
	inBody := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		bad := func(what string) (Case, error) {
			return Case{}, fmt.Errorf("%s:%d: %s", path, n, what)
		}
		switch {
		case inBody:
			if line == "" {
				continue
			}
			s, err := strconv.Unquote(line)
			if err != nil {
				return bad("want a Go double-quoted string")
			}
			raw.WriteString(s)
		case line == "":
			inBody = true
		case strings.HasPrefix(line, "status: "):
			st, err := strconv.Atoi(strings.TrimPrefix(line, "status: "))
			if err != nil || st < 100 || st > 599 {
				return bad("want status: a number from 100 to 599")
			}
			c.Status = st
		case strings.HasPrefix(line, "why: "):
			c.Why = strings.TrimPrefix(line, "why: ")
		default:
			return bad(`want "status: N", "why: text" or a blank line`)
		}
	}
	if err := sc.Err(); err != nil {
		return Case{}, err
	}
	if c.Status == 0 || raw.Len() == 0 {
		return Case{}, fmt.Errorf("%s: a fixture needs a status line and request bytes", path)
	}
	c.Bytes = raw.Bytes()
	return c, nil
}

// Exchange is what a server answered on one connection to a valid request
// ("GET /first") followed by a fixture.
type Exchange struct {
	// FirstStatus and FirstBody are the answer to the valid request.
	FirstStatus int
	FirstBody   string
	// Status is the answer to the fixture.
	Status int
	// Closed is whether the server closed the connection after it.
	Closed bool
}

// Problems says how ex falls short of what c asks, one message each: the
// valid request answered 200 "ok /first" (what the tests' handlers answer:
// "ok " and the path), the fixture answered c.Status, and the connection
// closed after it. None: ex is as c asks.
func (ex Exchange) Problems(c Case) []string {
	if ex.FirstStatus != 200 || ex.FirstBody != "ok /first" {
		return []string{fmt.Sprintf("first request: %d %q, want 200 %q", ex.FirstStatus, ex.FirstBody, "ok /first")}
	}
	var ps []string
	if ex.Status != c.Status {
		ps = append(ps, fmt.Sprintf("%s: %d, want %d", c.Why, ex.Status, c.Status))
	}
	if !ex.Closed {
		ps = append(ps, fmt.Sprintf("after the %d the connection stays open, want it closed", ex.Status))
	}
	return ps
}

// Send dials addr (TCP) and sends c on the connection (SendOn).
func Send(addr string, c Case) (Exchange, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return Exchange{}, err
	}
	return SendOn(conn, c)
}

// SendOn writes the valid request and c's bytes at once on conn, a fresh
// connection to the server under test (over TLS, say), reads both answers
// within 10 s, and closes conn.
func SendOn(conn net.Conn, c Case) (Exchange, error) {
	var ex Exchange
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return ex, err
	}
	if _, err := io.WriteString(conn, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"+string(c.Bytes)); err != nil {
		return ex, err
	}
	br := bufio.NewReader(conn)
	first, err := http.ReadResponse(br, nil)
	if err != nil {
		return ex, fmt.Errorf("the valid request's response: %w", err)
	}
	body, _ := io.ReadAll(first.Body)
	ex.FirstStatus, ex.FirstBody = first.StatusCode, string(body)
	second, err := http.ReadResponse(br, nil)
	if err != nil {
		return ex, fmt.Errorf("the fixture's response: %w", err)
	}
	_, _ = io.ReadAll(second.Body)
	ex.Status = second.StatusCode
	_, err = br.ReadByte()
	ex.Closed = err == io.EOF
	return ex, nil
}
