package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// process is a child process (redis-server, redis-sentinel) whose output
// goes to a log file.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// launch starts bin with args, its output appended to logPath, and waits
// until ping succeeds (polling the real condition, bounded by 15 s; between
// tries it gives the process a moment, unless the process has exited).
// what names the program in errors. The process is killed (SIGKILL) when
// the test binary dies, as when `go test -timeout` ends it without running
// the tests' cleanups (on Linux: see dieWithParent): no server outlives its
// test (one left running held the bench lock's descriptor for good).
func launch(what, bin string, args []string, logPath string, ping func() error) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &process{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	dieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() { p.cmd.Wait(); log.Close(); close(p.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if ping() == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("%s exited: %s", what, lastLines(string(b), 5))
		case <-time.After(5 * time.Millisecond):
		}
	}
	p.stop()
	return nil, fmt.Errorf("%s did not answer PING within 15s", what)
}

// stop kills the process (SIGKILL, which ends a stopped one too), if it
// runs, and waits for it to exit. A nil process is not running.
func (p *process) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// onFreePort calls start with a free port until it succeeds, five times at
// most (a free port can be taken by someone else before start binds it),
// and returns the port.
func onFreePort(start func(port int) error) (int, error) {
	var err error
	for range 5 {
		var port int
		if port, err = FreePort(); err != nil {
			continue
		}
		if err = start(port); err == nil {
			return port, nil
		}
	}
	return 0, err
}
