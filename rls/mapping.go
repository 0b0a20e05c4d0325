package rls

import (
	"errors"
	"fmt"
	"strings"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/sluicehq/sluice/configs"
)

// Bounds of a mapping and of a request.
const (
	// MaxEntries bounds the entries of a descriptor, configured or asked.
	MaxEntries = 16
	// MaxDescriptors bounds the descriptors of one request.
	MaxDescriptors = 64
)

// Mapping maps Envoy's rate limit domains and descriptors onto sluice's
// groups and keys, and says which response headers to add. The zero Mapping
// maps nothing: every descriptor is answered OK with no limit.
type Mapping struct {
	Domains []Domain
	// Headers selects the rate-limit header fields added to Envoy's
	// response. Default HeadersIETF.
	Headers Headers
}

// Domain is one of Envoy's rate limit domains (the ratelimit filter's
// "domain") and its descriptors.
type Domain struct {
	Name        string
	Descriptors []Descriptor
}

// Descriptor maps a descriptor, its entries in order, to a group. An entry
// with a value matches that value only; an entry without one matches any
// value, and the values of those entries, in order, make the sluice key
// (one wildcard: its value; several: joined by a 0x1f byte; none: the
// group's single limit, no key). So {remote_address} limits each client
// address apart, and {generic_key=checkout, header_match=premium} is one
// limit for what Envoy's actions tagged so.
//
// A descriptor is matched whole: Envoy's descriptor must have exactly these
// entries, in this order (as envoyproxy/ratelimit reaches a leaf of its
// descriptor tree).
type Descriptor struct {
	Entries []Entry
	// Group is the sluice group whose rate limit the descriptor spends.
	Group string
}

// Entry is one key (remote_address, header_match, generic_key, a
// request_headers descriptor_key, ...) and its value, "" for any.
type Entry struct {
	Key, Value string
}

// MappingOf returns the mapping of a config's [rls] section (configs
// checked its names and group references; Validate checks the rest).
func MappingOf(c *configs.RLS) Mapping {
	h, _ := ParseHeaders(string(c.Headers)) // configs checked the name
	m := Mapping{Headers: h}
	for _, d := range c.Domains {
		dom := Domain{Name: d.Name}
		for _, desc := range d.Descriptors {
			rd := Descriptor{Group: desc.Group}
			for _, e := range desc.Entries {
				rd.Entries = append(rd.Entries, Entry{Key: e.Key, Value: e.Value})
			}
			dom.Descriptors = append(dom.Descriptors, rd)
		}
		m.Domains = append(m.Domains, dom)
	}
	return m
}

// keySep joins the values of several wildcard entries into one key: a byte
// no header value or address carries.
const keySep = "\x1f"

// Validate reports every problem of m: empty or repeated domain names,
// descriptors without entries or a group, too many entries, entries without
// a key, the same descriptor twice in a domain.
func (m Mapping) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("rls: "+format, a...)) }
	if m.Headers > HeadersNone {
		bad("headers %d: want ietf, x-ratelimit or none", m.Headers)
	}
	domains := map[string]bool{}
	for i, d := range m.Domains {
		where := fmt.Sprintf("domain %d (%q)", i+1, d.Name)
		if d.Name == "" {
			bad("domain %d: name required", i+1)
		} else if domains[d.Name] {
			bad("%s: named twice", where)
		}
		domains[d.Name] = true
		seen := map[string]int{}
		for j, ds := range d.Descriptors {
			at := fmt.Sprintf("%s, descriptor %d", where, j+1)
			switch {
			case len(ds.Entries) == 0:
				bad("%s: entries required", at)
			case len(ds.Entries) > MaxEntries:
				bad("%s: %d entries, at most %d", at, len(ds.Entries), MaxEntries)
			}
			for k, e := range ds.Entries {
				if e.Key == "" {
					bad("%s, entry %d: key required", at, k+1)
				}
			}
			if ds.Group == "" {
				bad("%s: group required", at)
			}
			sig := signature(ds.Entries)
			if first, ok := seen[sig]; ok && len(ds.Entries) > 0 {
				bad("%s: the same entries as descriptor %d", at, first)
			}
			seen[sig] = j + 1
		}
	}
	return errors.Join(errs...)
}

func signature(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Key)
		b.WriteByte(0)
		b.WriteString(e.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// compiled is a Mapping ready for requests: domains by name, and in each
// the descriptors by their first entry's key.
type compiled struct {
	headers Headers
	domains map[string]*domain
}

type domain struct {
	byFirst map[string][]*rule
}

// rule is a compiled Descriptor: a copy, and its group's counts.
type rule struct {
	Descriptor
	counts *groupCounts
}

// compile builds m (valid) for requests; counts returns the counts of a
// group.
func compile(m Mapping, counts func(group string) *groupCounts) *compiled {
	c := &compiled{headers: m.Headers, domains: make(map[string]*domain, len(m.Domains))}
	for _, d := range m.Domains {
		cd := &domain{byFirst: map[string][]*rule{}}
		for i := range d.Descriptors {
			ds := &d.Descriptors[i]
			r := &rule{Descriptor: Descriptor{Group: ds.Group, Entries: append([]Entry(nil), ds.Entries...)}}
			if counts != nil {
				r.counts = counts(ds.Group)
			}
			k := r.Entries[0].Key
			cd.byFirst[k] = append(cd.byFirst[k], r)
		}
		c.domains[d.Name] = cd
	}
	return c
}

// lookup finds the descriptor of domain d that entries match and the
// sluice key they give. ok is false when none matches. A key from one
// wildcard entry is a substring of the request: no allocation.
func (d *domain) lookup(entries []*rlv3.RateLimitDescriptor_Entry) (r *rule, key string, ok bool) {
	if d == nil || len(entries) == 0 {
		return nil, "", false
	}
next:
	for _, cand := range d.byFirst[entries[0].GetKey()] {
		if len(cand.Entries) != len(entries) {
			continue
		}
		wild := 0
		for i, e := range cand.Entries {
			if entries[i].GetKey() != e.Key || e.Value != "" && entries[i].GetValue() != e.Value {
				continue next
			}
			if e.Value == "" {
				wild++
			}
		}
		switch wild {
		case 0:
		case 1:
			for i, e := range cand.Entries {
				if e.Value == "" {
					key = entries[i].GetValue()
				}
			}
		default:
			var b strings.Builder
			n := 0
			for i, e := range cand.Entries {
				if e.Value == "" {
					if n > 0 {
						b.WriteString(keySep)
					}
					b.WriteString(entries[i].GetValue())
					n++
				}
			}
			key = b.String()
		}
		return cand, key, true
	}
	return nil, "", false
}
