package lab

import "context"

// Direct is the contender with nothing in between: the load goes straight
// to the backend. It is the baseline every proxy is compared with.
type Direct struct{ name string }

// NewDirect returns a Direct contender named name ("direct" if empty).
func NewDirect(name string) Direct {
	if name == "" {
		name = "direct"
	}
	return Direct{name: name}
}

// Name implements Contender.
func (d Direct) Name() string { return d.name }

// Start implements Contender.
func (d Direct) Start(_ context.Context, env Env) (Running, error) {
	return directRun{url: env.Backend}, nil
}

type directRun struct{ url string }

func (r directRun) URL() string                   { return r.url }
func (r directRun) Sample(context.Context) Sample { return Sample{} }
func (r directRun) Stop(context.Context) error    { return nil }
