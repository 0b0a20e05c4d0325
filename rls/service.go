package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluicehq/sluice/adaptive"
)

// Params configures a Service. Gate is required.
type Params struct {
	// Gate decides the descriptors: sluice's *gate.Gate (see Gate).
	Gate Gate
	// Mapping maps domains and descriptors to groups and keys.
	Mapping Mapping
	// Shadow, if set, is asked for the group of each descriptor over its
	// limit: true answers OK instead (the figures kept, counted as
	// shadowed). A group or rate rule with mode = "shadow" is answered so
	// without it (the gate allows and counts the would-be rejection); the
	// hook shadows groups from outside the config.
	Shadow func(group string) bool
}

// Service implements Envoy's envoy.service.ratelimit.v3.RateLimitService on
// sluice's gate. Build it with New; it is safe for concurrent use.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer

	gate    Gate
	shadow  func(string) bool
	mapping atomic.Pointer[compiled]
	scratch sync.Pool // *call
	stats   counters
}

type counters struct {
	calls, invalid                                       atomic.Uint64
	ok, overLimit, shadowed, unmatched, unknown, refunds atomic.Uint64

	groupsMu sync.Mutex
	groups   map[string]*groupCounts // guarded by groupsMu; kept across mappings
}

// groupCounts are a group's decisions through the service.
type groupCounts struct {
	ok, overLimit, shadowed atomic.Uint64
}

// group returns the counts of group name, made on first use.
func (c *counters) group(name string) *groupCounts {
	c.groupsMu.Lock()
	defer c.groupsMu.Unlock()
	if c.groups == nil {
		c.groups = map[string]*groupCounts{}
	}
	g := c.groups[name]
	if g == nil {
		g = &groupCounts{}
		c.groups[name] = g
	}
	return g
}

// call is the per-call scratch of ShouldRateLimit.
type call struct {
	fs []figures
}

// New builds a Service from p, checking the mapping (Mapping.Validate) and
// that each of its groups exists in the gate.
func New(p Params) (*Service, error) {
	if p.Gate == nil {
		return nil, errors.New("rls: no gate")
	}
	s := &Service{gate: p.Gate, shadow: p.Shadow}
	s.scratch.New = func() any { return new(call) }
	if err := s.SetMapping(p.Mapping); err != nil {
		return nil, err
	}
	return s, nil
}

// SetMapping replaces the mapping (a reload): checked as New checks it,
// applied to the calls that start after it.
func (s *Service) SetMapping(m Mapping) error {
	err := m.Validate()
	var unknown []error
	for _, d := range m.Domains {
		for j, ds := range d.Descriptors {
			if ds.Group == "" {
				continue
			}
			if _, ok := s.gate.ClassOf(ds.Group, "", adaptive.Default); !ok {
				unknown = append(unknown, fmt.Errorf("rls: domain %q, descriptor %d: no group %q", d.Name, j+1, ds.Group))
			}
		}
	}
	if err = errors.Join(append([]error{err}, unknown...)...); err != nil {
		return err
	}
	s.mapping.Store(compile(m, s.stats.group))
	return nil
}

// validate checks a request beyond what its proto rules say (Validate).
func validate(req *rlsv3.RateLimitRequest) error {
	switch {
	case req == nil:
		return errors.New("rls: no request")
	case req.GetDomain() == "":
		return errors.New("rls: domain required")
	case len(req.GetDescriptors()) == 0:
		return errors.New("rls: at least one descriptor required")
	case len(req.GetDescriptors()) > MaxDescriptors:
		return fmt.Errorf("rls: %d descriptors, at most %d", len(req.GetDescriptors()), MaxDescriptors)
	}
	for i, d := range req.GetDescriptors() {
		if d == nil {
			return fmt.Errorf("rls: descriptor %d: empty", i)
		}
		if n := len(d.GetEntries()); n > MaxEntries {
			return fmt.Errorf("rls: descriptor %d: %d entries, at most %d", i, n, MaxEntries)
		}
		for j, e := range d.GetEntries() {
			if e == nil {
				return fmt.Errorf("rls: descriptor %d, entry %d: empty", i, j)
			}
		}
	}
	return req.Validate()
}

// ShouldRateLimit answers one of Envoy's rate limit requests: for each
// descriptor, in order, OK or OVER_LIMIT with its group's limit, what
// remains of it and when it resets; OVER_LIMIT overall when any descriptor
// is. A descriptor of an unknown domain, or one the domain does not map,
// is OK with no limit, as envoyproxy/ratelimit answers it. A request that
// is not well formed (no domain, no descriptor, an entry without a key, too
// many descriptors or entries) is an INVALID_ARGUMENT status.
func (s *Service) ShouldRateLimit(_ context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	s.stats.calls.Add(1)
	if err := validate(req); err != nil {
		s.stats.invalid.Add(1)
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	m := s.mapping.Load()
	d := m.domains[req.GetDomain()]
	resp := &rlsv3.RateLimitResponse{
		OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses:    make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(req.GetDescriptors())),
	}
	c := s.scratch.Get().(*call)
	c.fs = c.fs[:0]
	for i, desc := range req.GetDescriptors() {
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		resp.Statuses[i] = st
		if d == nil {
			s.stats.unknown.Add(1)
			continue
		}
		ds, key, ok := d.lookup(desc.GetEntries())
		if !ok {
			s.stats.unmatched.Add(1)
			continue
		}
		if desc.GetIsNegativeHits() {
			// A refund: sluice's limiters give nothing back. Spend nothing.
			s.stats.refunds.Add(1)
			continue
		}
		class, ok := s.gate.ClassOf(ds.Group, key, adaptive.Default)
		if !ok { // the group went away in a reload of the gate
			s.stats.unmatched.Add(1)
			continue
		}
		res, pol, rej, allowed := s.gate.AllowRate(class, cost(req, desc))
		var f figures
		if allowed && !rej.Rejected() {
			f = render(ds.Group, res, pol, nil)
			s.stats.ok.Add(1)
			ds.counts.ok.Add(1)
		} else {
			f = render(ds.Group, res, pol, &rej)
			// allowed with a rejection: the group or its rate rule is in
			// shadow mode (the gate counted it as a would-be rejection).
			if allowed || s.shadow != nil && s.shadow(ds.Group) {
				f.reason, f.retryAfter = "", 0
				s.stats.shadowed.Add(1)
				ds.counts.shadowed.Add(1)
			} else {
				st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
				resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
				s.stats.overLimit.Add(1)
				ds.counts.overLimit.Add(1)
			}
		}
		if f.policy != "" {
			st.CurrentLimit = currentLimit(&f)
			st.LimitRemaining = uint32(min(max(f.remaining, 0), math.MaxUint32))
			st.DurationUntilReset = durationpb.New(f.reset)
		}
		if f.policy != "" || f.reason != "" {
			c.fs = append(c.fs, f)
		}
	}
	resp.ResponseHeadersToAdd = responseHeaders(m.headers, c.fs)
	clear(c.fs) // drop the strings
	s.scratch.Put(c)
	return resp, nil
}

// cost is a descriptor's hits: its own hits_addend when set (and not 0),
// else the request's (when not 0), else 0: the group's configured cost, as
// Envoy counts an unset hits_addend as one hit.
func cost(req *rlsv3.RateLimitRequest, d *rlv3.RateLimitDescriptor) int64 {
	switch own := d.GetHitsAddend().GetValue(); {
	case own > 0:
		return int64(min(own, math.MaxInt64))
	case req.GetHitsAddend() > 0:
		return int64(req.GetHitsAddend())
	}
	return 0
}

// Stats is the service's read-out: counts since New.
type Stats struct {
	// Calls counts ShouldRateLimit calls; Invalid those refused as not well
	// formed.
	Calls, Invalid uint64
	// OK and OverLimit count the descriptors decided by a group; Shadowed
	// those over their limit but answered OK (Params.Shadow).
	OK, OverLimit, Shadowed uint64
	// UnknownDomain counts descriptors of a domain the mapping does not
	// have, Unmatched those the domain does not map, Refunds those with
	// is_negative_hits (spent nothing): all answered OK with no limit.
	UnknownDomain, Unmatched, Refunds uint64
	// Groups holds the decisions by group, sorted by name: every group a
	// mapping named since New.
	Groups []GroupStats
}

// GroupStats are one group's decisions through the service.
type GroupStats struct {
	Name                    string
	OK, OverLimit, Shadowed uint64
}

// Stats returns the service's counts.
func (s *Service) Stats() Stats {
	c := &s.stats
	st := Stats{Calls: c.calls.Load(), Invalid: c.invalid.Load(), OK: c.ok.Load(), OverLimit: c.overLimit.Load(),
		Shadowed: c.shadowed.Load(), UnknownDomain: c.unknown.Load(), Unmatched: c.unmatched.Load(), Refunds: c.refunds.Load()}
	c.groupsMu.Lock()
	for name, g := range c.groups {
		st.Groups = append(st.Groups, GroupStats{Name: name, OK: g.ok.Load(), OverLimit: g.overLimit.Load(), Shadowed: g.shadowed.Load()})
	}
	c.groupsMu.Unlock()
	sort.Slice(st.Groups, func(i, j int) bool { return st.Groups[i].Name < st.Groups[j].Name })
	return st
}
