package adaptive

// ResourceGuardParams configures a ResourceGuard. Zero fields mean the defaults.
type ResourceGuardParams struct {
	// CPU and Memory are the utilisations in (0, 1] beyond which the guard acts;
	// zero turns that guard off. Use the operator's targets.
	CPU, Memory float64
	// Hysteresis is how far below its threshold a utilisation must fall before the
	// guard releases, in [0, 0.5); default 0.05.
	Hysteresis float64
}

// Validate reports every problem with the params.
func (p ResourceGuardParams) Validate() error {
	var pr problems
	pr.utilTarget("guard cpu", p.CPU)
	pr.utilTarget("guard memory", p.Memory)
	pr.ratio("guard hysteresis", p.Hysteresis, 0, 0.5)
	return pr.err()
}

// ResourceGuard protects the process or container from running out of memory or
// CPU: beyond the memory threshold only Critical is admitted (RejectMemory);
// beyond the CPU threshold priorities below Default are shed (RejectCPU). It acts
// on the interval's utilisation, with hysteresis on release; an unknown
// utilisation releases its guard (fail open). The control law, aiming below the
// same targets, normally keeps the guard idle; the guard is the backstop.
//
// Not safe for concurrent use; publish the Floor it returns.
type ResourceGuard struct {
	p        ResourceGuardParams
	cpu, mem bool
}

// NewResourceGuard returns a guard that is not engaged.
func NewResourceGuard(p ResourceGuardParams) (*ResourceGuard, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p.Hysteresis = orDefault(p.Hysteresis, 0.05)
	return &ResourceGuard{p: p}, nil
}

// Update applies one interval's sample and returns the new floor.
func (g *ResourceGuard) Update(s Sample) Floor {
	g.mem = g.engaged(g.mem, g.p.Memory, s.Memory, s.MemoryKnown)
	g.cpu = g.engaged(g.cpu, g.p.CPU, s.CPU, s.CPUKnown)
	return g.Floor()
}

func (g *ResourceGuard) engaged(on bool, threshold, v float64, known bool) bool {
	u, ok := utilisation(v, known)
	if threshold == 0 || !ok {
		return false
	}
	if on {
		return u > threshold-g.p.Hysteresis
	}
	return u > threshold
}

// Floor returns the current floor.
func (g *ResourceGuard) Floor() Floor {
	switch {
	case g.mem:
		return Floor{Priority: Critical, Reason: RejectMemory}
	case g.cpu:
		return Floor{Priority: Default, Reason: RejectCPU}
	}
	return Floor{}
}
