package main

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// refuser is the gnet candidate: every request head is answered 429 from
// prebuilt bytes, with the Date of the current second patched in. Bodies are
// not framed (the refuse part's requests have none): it measures what an event
// loop costs per refusal, not a server that could be used.
type refuser struct {
	gnet.BuiltinEventEngine
	head []byte                 // the answer up to the Date value
	tail []byte                 // after it
	date atomic.Pointer[[]byte] // the current second's, renewed by a ticker: the loops share it
}

func newRefuser() *refuser {
	body := refusedBody + "\n"
	e := &refuser{
		head: []byte("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: text/plain; charset=utf-8\r\n" +
			"X-Content-Type-Options: nosniff\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nDate: "),
		tail: []byte("\r\n\r\n" + body),
	}
	e.tick()
	go func() {
		for range time.Tick(time.Second) {
			e.tick()
		}
	}()
	return e
}

// tick renews the Date value.
func (e *refuser) tick() {
	d := time.Now().UTC().AppendFormat(nil, "Mon, 02 Jan 2006 15:04:05 GMT")
	e.date.Store(&d)
}

func (e *refuser) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	used := 0
	for {
		end := bytes.Index(buf[used:], []byte("\r\n\r\n"))
		if end < 0 {
			break
		}
		used += end + 4
		_, _ = c.Writev([][]byte{e.head, *e.date.Load(), e.tail})
	}
	_, _ = c.Discard(used)
	if c.InboundBuffered() > 64<<10 {
		return gnet.Close
	}
	return gnet.None
}

// serveGnet runs the gnet refuser on listen until SIGINT or SIGTERM.
func serveGnet(listen string) int {
	e := newRefuser()
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		os.Exit(0)
	}()
	err := gnet.Run(e, "tcp://"+listen, gnet.WithMulticore(true), gnet.WithNumEventLoop(2), gnet.WithTCPNoDelay(gnet.TCPNoDelay))
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidates:", err)
		return 1
	}
	return 0
}
