package lab

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/cmd/internal/lab/hog"
	"github.com/sluicehq/sluice/cmd/internal/lab/proc"
)

// startHog starts a CPU hog for p and returns what stops it: with command
// nil in this process, else command (e.g. ["sluice-lab", "hog"]) with
// -threads and -nice appended, which must print a line on stdout once its
// loops run. It returns once the hog runs.
func startHog(p hog.Params, command []string, dir string) (stop func(), err error) {
	if command == nil {
		h, err := hog.Start(p)
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		return func() { h.Stop() }, nil
	}
	argv := append(append([]string{}, command...), "-threads="+strconv.Itoa(p.Threads), "-nice="+strconv.Itoa(p.Nice))
	lines := make(chan string, 1)
	child, err := proc.StartReading(argv, "", filepath.Join(dir, "hog.log"), nil, lines, 1)
	if err != nil {
		return nil, err
	}
	stop = func() { _ = child.Stop(3 * time.Second) }
	select {
	case <-lines:
		return stop, nil
	case <-child.Done():
		return nil, fmt.Errorf("lab: hog exited at start: %v (log in %s)", child.Err(), dir)
	case <-time.After(10 * time.Second):
		stop()
		return nil, errors.New("lab: hog did not start within 10s")
	}
}
