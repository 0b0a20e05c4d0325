// Package proc starts, stops and measures the lab's child processes (a
// backend, a proxy under test). Each child gets a process group of its own
// (on Unix; Windows has none), so stopping it reaches the workers it
// forked, and nothing else.
package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a started child. Stop it exactly once.
type Process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // Wait's result, set before done closes
}

// Start runs argv with its stdout and stderr appended to the file logPath.
// dir is its working directory ("" for ours); env is added to ours.
func Start(argv []string, dir, logPath string, env []string) (*Process, error) {
	return start(argv, dir, logPath, env, nil)
}

// StartReading is Start, except that the child's stdout also goes, line by
// line, to lines until it has sent want of them (the rest only to the log):
// for children that print their address. lines needs room for want lines
// or a reader, else the child blocks on its stdout.
func StartReading(argv []string, dir, logPath string, env []string, lines chan<- string, want int) (*Process, error) {
	return start(argv, dir, logPath, env, &reader{lines: lines, want: want})
}

type reader struct {
	lines chan<- string
	want  int
}

func start(argv []string, dir, logPath string, env []string, rd *reader) (*Process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("proc: empty command")
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("proc: log: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = log
	ownGroup(cmd)
	var stdout io.ReadCloser
	if rd != nil {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			log.Close()
			return nil, fmt.Errorf("proc: %w", err)
		}
	} else {
		cmd.Stdout = log
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("proc: start %s: %w", argv[0], err)
	}
	p := &Process{cmd: cmd, log: log, done: make(chan struct{})}
	copied := make(chan struct{})
	if stdout != nil {
		go func() {
			defer close(copied)
			sc := bufio.NewScanner(stdout)
			for n := 0; sc.Scan(); n++ {
				_, _ = fmt.Fprintln(log, sc.Text())
				if n < rd.want {
					rd.lines <- sc.Text()
				}
			}
		}()
	} else {
		close(copied)
	}
	go func() {
		<-copied
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// PID is the child's process ID, which is also its process group's.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the child exited; valid once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop sends SIGTERM to the child, waits up to grace for it to exit, then
// kills its process group. It returns the child's exit error unless that
// is just the signal Stop sent.
func (p *Process) Stop(grace time.Duration) error {
	defer p.log.Close()
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		killGroup(p.cmd.Process)
		<-p.done
	}
	killGroup(p.cmd.Process) // workers left behind by the group leader, if any
	var ee *exec.ExitError
	if errors.As(p.err, &ee) && ee.ProcessState != nil {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil
		}
	}
	return p.exitErr()
}

func (p *Process) exitErr() error {
	if p.err == nil {
		return nil
	}
	return fmt.Errorf("proc: %s: %w", strings.Join(p.cmd.Args, " "), p.err)
}

// WaitReady calls probe every 20 ms until it succeeds, the child exits,
// or ctx ends.
func (p *Process) WaitReady(ctx context.Context, probe func(context.Context) error) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := probe(ctx); err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("proc: %s exited before it was ready: %v", p.cmd.Args[0], p.err)
		case <-ctx.Done():
			return fmt.Errorf("proc: %s not ready: %w", p.cmd.Args[0], ctx.Err())
		case <-tick.C:
		}
	}
}
