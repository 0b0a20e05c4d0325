package api

import "time"

// Status is GET /v1/status.
type Status struct {
	Version       string    `json:"version"`
	GoVersion     string    `json:"go_version"`
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	Ready         bool      `json:"ready"`
	NotReady      string    `json:"not_ready,omitempty"`

	Config    ConfigInfo `json:"config"`
	Control   Control    `json:"control"`
	State     State      `json:"state"`
	Resources Resources  `json:"resources"`
	Admin     Admin      `json:"admin"`
	// Redis is the link to Redis of the global quotas; null without one.
	Redis *Redis `json:"redis"`
	// Circuit is the upstream's circuit breaker; null when it is off.
	Circuit *Circuit `json:"circuit"`
	// Fronts are the front-ends beside the proxy (the permit service,
	// Envoy's rate limit service); empty when none is configured.
	Fronts []Front `json:"fronts"`
}

// Front is a front-end beside the proxy: its name ("permit", "rls"), the
// address it serves ("unix:///path" for a unix socket), whether its calls
// need a token, and its counts by name.
type Front struct {
	Name   string            `json:"name"`
	Listen string            `json:"listen"`
	Token  bool              `json:"token"`
	Counts map[string]uint64 `json:"counts"`
}

// Circuit is the upstream's circuit breaker: its state ("closed", "open",
// "half_open"), since when, and why it came to be in it ("" while it never
// changed).
type Circuit struct {
	State  string    `json:"state"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

// ConfigInfo is the config in force: where it was read from (empty for the
// embedded default), its hash and when it was loaded.
type ConfigInfo struct {
	Source string     `json:"source"`
	Hash   string     `json:"hash"`
	Loaded *time.Time `json:"loaded"`
	Groups []string   `json:"groups"`
	// Overrides names the groups with a runtime override in force.
	Overrides []string `json:"overrides"`
	// RefusedReload is the last reload that was refused (the running config
	// kept serving); null while none was. Compare its time with Loaded: a
	// refusal after the last load means the file on disk is not the config
	// in force.
	RefusedReload *RefusedReload `json:"refused_reload"`
}

// RefusedReload is a reload that was refused: when, who asked ("SIGHUP", or
// the admin API's caller), and the error, every problem of the file in it.
type RefusedReload struct {
	At    time.Time `json:"at"`
	By    string    `json:"by"`
	Error string    `json:"error"`
}

// Control is the control loop.
type Control struct {
	Interval float64    `json:"interval_seconds"`
	Ticks    uint64     `json:"ticks"`
	LastTick *time.Time `json:"last_tick"`
}

// State is the state file of the learned limits.
type State struct {
	File      string     `json:"file"`
	LastSave  *time.Time `json:"last_save"`
	SaveError string     `json:"save_error,omitempty"`
	Restore   Restore    `json:"restore"`
}

// Restore is what the state file gave back at start.
type Restore struct {
	SavedAt *time.Time `json:"saved_at"`
	Groups  int        `json:"groups"`
	Error   string     `json:"error,omitempty"`
}

// Admin is the admin API's own listener.
type Admin struct {
	Listen string `json:"listen"`
	// Writable reports whether a token is set, so mutations are possible.
	Writable bool `json:"writable"`
	// ReadsNeedToken reports whether reads need the token (off loopback).
	ReadsNeedToken bool `json:"reads_need_token"`
}

// Signal is a measured figure: value null and a reason when not known.
type Signal struct {
	Value  *float64 `json:"value"`
	Known  bool     `json:"known"`
	Reason string   `json:"reason,omitempty"`
}

// Resources is the last sample of what is guarded.
type Resources struct {
	SampledAt *time.Time `json:"sampled_at"`
	// CPU, Memory and CPUPressure are what the targets steer by. From says
	// whose they are ("cgroup", "process" or "host"; empty when a signal
	// has no source), Source says it for people, or why there is none.
	CPU               Signal  `json:"cpu"`
	CPUFrom           string  `json:"cpu_from"`
	CPUSource         string  `json:"cpu_source"`
	Memory            Signal  `json:"memory"`
	MemoryFrom        string  `json:"memory_from"`
	MemorySource      string  `json:"memory_source"`
	CPUPressure       Signal  `json:"cpu_pressure"`
	CPUPressureFrom   string  `json:"cpu_pressure_from"`
	CPUPressureSource string  `json:"cpu_pressure_source"`
	Host              Host    `json:"host"`
	Cgroup            Cgroup  `json:"cgroup"`
	Process           Process `json:"process"`
	Runtime           Runtime `json:"runtime"`
}

// Pressure is pressure stall information (PSI), shares of time 0–1.
type Pressure struct {
	CPUSome    Signal `json:"cpu_some"`
	CPUFull    Signal `json:"cpu_full"`
	MemorySome Signal `json:"memory_some"`
	MemoryFull Signal `json:"memory_full"`
}

// Host is the machine.
type Host struct {
	CPUs        int      `json:"cpus"`
	CPU         Signal   `json:"cpu"`
	Memory      Signal   `json:"memory"`
	MemoryTotal Signal   `json:"memory_total_bytes"`
	Pressure    Pressure `json:"pressure"`
}

// Cgroup is the cgroups the guarded signals are read from: CPU and memory
// may be read from different ones, pressure only from cgroup v2.
type Cgroup struct {
	CPUDir           string   `json:"cpu_dir"`
	CPU              Signal   `json:"cpu"`
	CPULimit         Signal   `json:"cpu_limit_cores"`
	Throttled        Signal   `json:"throttled"`
	MemoryDir        string   `json:"memory_dir"`
	Memory           Signal   `json:"memory"`
	MemoryWorkingSet Signal   `json:"memory_working_set_bytes"`
	MemoryLimit      Signal   `json:"memory_limit_bytes"`
	PressureDir      string   `json:"pressure_dir"`
	Pressure         Pressure `json:"pressure"`
}

// Process is the guarded process (probe.pid_file).
type Process struct {
	PID int `json:"pid"`
	// CPUs is how many CPUs it may run on; CPU is its share of them.
	CPUs int    `json:"cpus"`
	CPU  Signal `json:"cpu"`
	RSS  Signal `json:"rss_bytes"`
}

// Runtime is sluice's own Go runtime.
type Runtime struct {
	HeapBytes  uint64  `json:"heap_bytes"`
	HeapGoal   uint64  `json:"heap_goal_bytes"`
	Goroutines int     `json:"goroutines"`
	GCCycles   uint64  `json:"gc_cycles"`
	GCPauseMax float64 `json:"gc_pause_max_seconds"`
}

// Redis is the link to Redis of the global quotas in /v1/status.
type Redis struct {
	Mode  string    `json:"mode"`
	Since time.Time `json:"since"`
	// NextProbe is, in fallback mode, the earliest instant a decision tries
	// Redis again.
	NextProbe   *time.Time `json:"next_probe"`
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at"`
	Fallback    string     `json:"fallback"`
	Nodes       Nodes      `json:"nodes"`
	// Groups are the groups with a global quota; the counts are their sums.
	Groups    []string  `json:"groups"`
	Decisions Decisions `json:"decisions"`
	Errors    uint64    `json:"errors"`
	Timeouts  uint64    `json:"timeouts"`
	// Timeout is how long a decision waits for Redis now, in seconds:
	// redis.timeout, or more while Redis answers slower (up to 100ms).
	Timeout float64 `json:"timeout_seconds"`
	// Late are, per group, the bound on what the decisions Redis did not
	// answer in time may admit, and what they admitted here.
	Late []Late `json:"late"`
	// Leased are the groups whose global quota is leased (sync "leased"),
	// with their over-admission bound and the units leased out; null when
	// none is.
	Leased []Leased `json:"leased"`
}

// Leased is a leased quota's bound in /v1/status (the group's read-out has
// the rest of its lease).
type Leased struct {
	Group       string `json:"group"`
	Bound       int64  `json:"bound"`
	Outstanding int64  `json:"outstanding"`
}

// Late is a global quota's bound on its late decisions: those Redis did not
// answer within the timeout, decided by the fallback. Bound is what they
// may admit in units per second on all nodes together, 1 % of the quota
// (null with fallback "open": no bound; 0 with "closed": they are
// refused); Admitted the units they admitted on this node.
type Late struct {
	Group    string   `json:"group"`
	Bound    *float64 `json:"bound_per_second"`
	Admitted uint64   `json:"admitted"`
}

// Nodes is how many nodes share the global quotas.
type Nodes struct {
	// Configured is redis.nodes; Observed the nodes seen alive through
	// their heartbeats in Redis (null before the first one); Share the
	// count the local fallback divides each quota by, the larger of both.
	Configured int  `json:"configured"`
	Observed   *int `json:"observed"`
	Share      int  `json:"share"`
}
