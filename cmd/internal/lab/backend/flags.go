package backend

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/pause"
)

// changeList is the repeatable -change flag.
type changeList []Change

func (c *changeList) String() string {
	var s []string
	for _, ch := range *c {
		s = append(s, ch.String())
	}
	return strings.Join(s, " ")
}

func (c *changeList) Set(v string) error {
	ch, err := ParseChange(v)
	if err != nil {
		return err
	}
	*c = append(*c, ch)
	return nil
}

// distFlag is the -service flag.
type distFlag struct{ d *Dist }

func (f distFlag) String() string {
	if f.d == nil || f.d.Kind == "" {
		return DefaultService.String()
	}
	return f.d.String()
}

func (f distFlag) Set(v string) error {
	d, err := ParseDist(v)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// RegisterFlags defines the backend's flags on fs. After fs.Parse, the
// returned function builds the Params they describe (validated). Args is
// its inverse.
func RegisterFlags(fs *flag.FlagSet) func() (Params, error) {
	var p Params
	var changes changeList
	fs.IntVar(&p.Workers, "workers", DefaultWorkers, "worker pool size W")
	fs.Var(distFlag{&p.Service}, "service", "service time: const:D, exp:MEAN, lognormal:MEAN:SIGMA or bimodal:FAST:SLOW:FRACTION")
	fs.IntVar(&p.Queue, "queue", 0, "bound on requests waiting for a worker (0: unbounded); beyond it, 503")
	fs.Int64Var(&p.QueuedMemory, "queued-memory", 0, "bytes a request holds while it waits for a worker")
	fs.Int64Var(&p.MemoryLimit, "memory-limit", DefaultMemoryLimit, "queued-request memory at which the backend crashes")
	fs.DurationVar(&p.RestartDelay, "restart-delay", DefaultRestartDelay, "how long the backend stays down after a crash")
	fs.BoolVar(&p.CPU, "cpu", false, "burn the service time as CPU time instead of sleeping")
	fs.BoolVar(&p.DropAbandoned, "drop-abandoned", false, "take a queued request out of the queue when its client goes away")
	fs.IntVar(&p.ResponseBytes, "response-bytes", 3, "size of a successful response body")
	fs.Var(&changes, "change", "a scheduled change, AT:workers=N,slow=F (repeatable), e.g. 30s:slow=2")
	fs.Var(stallFlag{&p.Stall}, "stall", "periodic stalls of every worker, for=D,every=D[,from=D], e.g. for=300ms,every=3s")
	return func() (Params, error) {
		p.Changes = changes
		if errs := p.Validate(); len(errs) > 0 {
			return Params{}, errors.Join(errs...)
		}
		return p.WithDefaults(), nil
	}
}

// Args returns the flags that RegisterFlags reads back as p (with its
// defaults filled in).
func (p Params) Args() []string {
	p = p.WithDefaults()
	args := []string{
		"-workers=" + strconv.Itoa(p.Workers),
		"-service=" + p.Service.String(),
		"-queue=" + strconv.Itoa(p.Queue),
		"-queued-memory=" + strconv.FormatInt(p.QueuedMemory, 10),
		"-memory-limit=" + strconv.FormatInt(p.MemoryLimit, 10),
		"-restart-delay=" + p.RestartDelay.String(),
		"-cpu=" + strconv.FormatBool(p.CPU),
		"-drop-abandoned=" + strconv.FormatBool(p.DropAbandoned),
		"-response-bytes=" + strconv.Itoa(p.ResponseBytes),
	}
	for _, c := range p.Changes {
		args = append(args, "-change="+c.String())
	}
	if p.Stall.On() {
		args = append(args, "-stall="+p.Stall.String())
	}
	return args
}

// stallFlag is the -stall flag.
type stallFlag struct{ p *pause.Periodic }

func (f stallFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f stallFlag) Set(v string) error {
	p, err := pause.Parse(v)
	if err != nil {
		return fmt.Errorf("backend: stall: %w", err)
	}
	*f.p = p
	return nil
}
