package redistest

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Command is one command a server ran, as MONITOR reports it: the
// server's clock when it ran it, who sent it ("lua" for a command a script
// ran, else the client's address), and its arguments (the name first, in
// the case it was sent).
type Command struct {
	At     time.Time
	Client string
	Args   []string
}

// Script reports whether a script ran the command.
func (c Command) Script() bool { return c.Client == "lua" }

// Monitor records every command a server runs (MONITOR, on a connection of
// its own) from Monitor until Stop: what a test reads to judge decisions
// exactly, at the instants the server made them.
type Monitor struct {
	s    *Server
	conn net.Conn
	done chan struct{}
	cmds []Command
	err  error
}

// endMark is the argument of the ECHO that Stop sends to know it has read
// everything before it.
const endMark = "redistest-monitor-end"

// Monitor starts recording the commands s runs. Stop ends it.
func (s *Server) Monitor() *Monitor {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		s.t.Fatalf("monitor: %v", err)
	}
	rd := bufio.NewReaderSize(c, 1<<16)
	if _, err := c.Write([]byte("MONITOR\r\n")); err != nil {
		c.Close()
		s.t.Fatalf("monitor: %v", err)
	}
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		c.Close()
		s.t.Fatalf("monitor: %q %v", line, err)
	}
	m := &Monitor{s: s, conn: c, done: make(chan struct{})}
	s.t.Cleanup(func() { c.Close() })
	go func() {
		defer close(m.done)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				m.err = err
				return
			}
			cmd, err := parseMonitor(strings.TrimRight(line, "\r\n"))
			if err != nil {
				m.err = err
				return
			}
			if len(cmd.Args) == 2 && strings.EqualFold(cmd.Args[0], "echo") && cmd.Args[1] == endMark {
				return
			}
			m.cmds = append(m.cmds, cmd)
		}
	}()
	return m
}

// Stop ends the recording once every command the server ran before it is
// read, and returns them in order.
func (m *Monitor) Stop() []Command {
	t := m.s.t
	t.Helper()
	c := m.s.Client()
	if err := c.Echo(t.Context(), endMark).Err(); err != nil {
		t.Fatalf("monitor: the end mark: %v", err)
	}
	timer := time.NewTimer(30 * time.Second) // a failure's bound
	defer timer.Stop()
	select {
	case <-m.done:
	case <-timer.C:
		t.Fatal("monitor: the end mark did not come back within 30s")
	}
	m.conn.Close()
	if m.err != nil {
		t.Fatalf("monitor: %v", m.err)
	}
	return m.cmds
}

// parseMonitor reads a MONITOR line:
//
//	+1700000000.123456 [0 127.0.0.1:5000] "evalsha" "ab12" "1" "key"
func parseMonitor(line string) (Command, error) {
	rest, ok := strings.CutPrefix(line, "+")
	if !ok {
		return Command{}, fmt.Errorf("monitor line %q", line)
	}
	stamp, rest, ok := strings.Cut(rest, " [")
	who, rest, ok2 := strings.Cut(rest, "] ")
	sec, frac, ok3 := strings.Cut(stamp, ".")
	if !ok || !ok2 || !ok3 || len(frac) != 6 {
		return Command{}, fmt.Errorf("monitor line %q", line)
	}
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return Command{}, fmt.Errorf("monitor line %q", line)
	}
	_, client, _ := strings.Cut(who, " ") // "db client"
	cmd := Command{At: time.Unix(s, us*1000), Client: client}
	for rest != "" {
		if rest[0] != '"' {
			return Command{}, fmt.Errorf("monitor line %q", line)
		}
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' {
				i++
			}
		}
		if i >= len(rest) {
			return Command{}, fmt.Errorf("monitor line %q", line)
		}
		arg, err := strconv.Unquote(rest[:i+1])
		if err != nil {
			return Command{}, fmt.Errorf("monitor line %q: %w", line, err)
		}
		cmd.Args = append(cmd.Args, arg)
		rest = strings.TrimPrefix(rest[i+1:], " ")
	}
	return cmd, nil
}
