package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/backend"
	"github.com/sluicehq/sluice/cmd/internal/lab/proc"
)

// backendRun is the simulated backend of one run: in the lab's own
// process, or a child process (so that its memory and CPU are its own).
type backendRun struct {
	url    string
	pid    int // 0 in our own process
	stop   func(context.Context) error
	client *http.Client
}

// startBackend starts a backend for p. With command nil it runs in this
// process; else command (e.g. ["sluice-lab", "backend"]) is started with
// -addr and p's flags appended, and must print a line containing its
// http:// URL first on stdout.
func startBackend(p backend.Params, command []string, dir string) (*backendRun, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	if command == nil {
		in, err := backend.Listen("127.0.0.1:0", p)
		if err != nil {
			return nil, err
		}
		return &backendRun{url: in.URL, stop: in.Shutdown, client: client}, nil
	}
	argv := append(append(append([]string{}, command...), "-addr=127.0.0.1:0"), p.Args()...)
	lines := make(chan string, 1)
	child, err := proc.StartReading(argv, "", filepath.Join(dir, "backend.log"), nil, lines, 1)
	if err != nil {
		return nil, err
	}
	stop := func(context.Context) error { return child.Stop(3 * time.Second) }
	select {
	case line := <-lines:
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "http://") {
				return &backendRun{url: f, pid: child.PID(), stop: stop, client: client}, nil
			}
		}
		_ = stop(context.Background())
		return nil, fmt.Errorf("lab: backend printed %q, not its URL", line)
	case <-child.Done():
		return nil, fmt.Errorf("lab: backend exited at start: %v (log in %s)", child.Err(), dir)
	case <-time.After(10 * time.Second):
		_ = stop(context.Background())
		return nil, errors.New("lab: backend did not print its URL within 10s")
	}
}

func (b *backendRun) addr() string { return strings.TrimPrefix(b.url, "http://") }

func (b *backendRun) reset(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+backend.ResetPath, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("lab: backend reset: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("lab: backend reset: status %d", resp.StatusCode)
	}
	return nil
}

func (b *backendRun) stats(ctx context.Context) (backend.Stats, error) {
	var s backend.Stats
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+backend.StatsPath, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		return s, fmt.Errorf("lab: backend stats: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("lab: backend stats: %w", err)
	}
	return s, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}
