package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// The command name holds spaces and a ')' of its own.
	line := "4242 (evil) name) S 1 4240 4240 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1 0 0\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.pgrp != 4240 || st.cpu != 3*time.Second {
		t.Fatalf("parseStat = %+v, want pgrp 4240 cpu 3s", st)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 a 3 0 0 0 0 0 0 0 1 2"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	rss, hwm := parseStatus([]byte("Name:\tx\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t3\n"))
	if rss != 1<<20 || hwm != 2<<20 {
		t.Fatalf("rss %d hwm %d", rss, hwm)
	}
	if rss, hwm := parseStatus([]byte("Name:\tkthreadd\nVmRSS:\n")); rss != 0 || hwm != 0 {
		t.Fatalf("kernel thread: %d %d", rss, hwm)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("4242 (a b) S 1 4240 4240 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1 0 0")
	f.Add("1 ()) R 0 1 1 0 -1 0 0 0 0 0 18446744073709551615 1 0 0")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStat([]byte(s))
		if err == nil && st.cpu < 0 {
			t.Fatalf("negative cpu from %q", s)
		}
		parseStatus([]byte(s))
	})
}

func TestGroupUsageFakeProc(t *testing.T) {
	root := t.TempDir()
	write := func(pid, stat, status string) {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644)
		os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644)
	}
	write("10", "10 (master) S 1 10 10 0 -1 0 0 0 0 0 100 0 0 0 20 0", "VmHWM:\t300 kB\nVmRSS:\t100 kB\n")
	write("11", "11 (worker) S 10 10 10 0 -1 0 0 0 0 0 50 50 0 0 20 0", "VmHWM:\t900 kB\nVmRSS:\t800 kB\n")
	write("12", "12 (other) S 1 12 12 0 -1 0 0 0 0 0 999 0 0 0 20 0", "VmHWM:\t1 kB\nVmRSS:\t1 kB\n")
	os.MkdirAll(filepath.Join(root, "self"), 0o755)
	u, err := groupUsage(root, 10)
	if err != nil {
		t.Fatal(err)
	}
	if u.Procs != 2 || u.RSS != 900<<10 || u.HWM != 900<<10 || u.CPU != 2*time.Second {
		t.Fatalf("usage %+v", u)
	}
	if _, err := groupUsage(root, 99); err == nil {
		t.Fatal("empty group: no error")
	}
}

func TestStartReadStop(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	// The first two stdout lines come to the channel (and the log); the
	// child writes stderr first, so once "second" arrives "oops" is logged.
	// "third" may or may not be out before Stop: it is not checked.
	lines := make(chan string, 2)
	p, err := StartReading([]string{"sh", "-c", "echo oops >&2; echo first; echo second; echo third; exec sleep 60"}, "", log, nil, lines, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := <-lines, <-lines; a != "first" || b != "second" {
		t.Fatalf("lines %q %q", a, b)
	}
	u, err := GroupUsage(p.PID())
	if err != nil || u.Procs < 1 || u.RSS <= 0 {
		t.Fatalf("usage of a live child: %+v, %v", u, err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	b, _ := os.ReadFile(log)
	for _, want := range []string{"first", "second", "oops"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("log %q lacks %q", b, want)
		}
	}
}

// TestStopKillsAStubbornChild: a child that ignores SIGTERM is killed,
// with its group, after the grace period.
func TestStopKillsAStubbornChild(t *testing.T) {
	lines := make(chan string, 1)
	p, err := StartReading([]string{"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"}, "", filepath.Join(t.TempDir(), "log"), nil, lines, 1)
	if err != nil {
		t.Fatal(err)
	}
	<-lines // the trap is set
	if err := p.Stop(100 * time.Millisecond); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("child still running after Stop")
	}
}

func TestWaitReadyFailsWhenTheChildExits(t *testing.T) {
	p, err := Start([]string{"sh", "-c", "exit 3"}, "", filepath.Join(t.TempDir(), "log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(context.Background(), func(context.Context) error { return errors.New("not yet") })
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("WaitReady: %v", err)
	}
	if err := p.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Stop of a failed child: %v", err)
	}
	if _, err := Start(nil, "", filepath.Join(t.TempDir(), "log"), nil); err == nil {
		t.Fatal("empty command started")
	}
}
