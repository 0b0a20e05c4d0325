package client

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Priority is a request's priority as sluice's groups read it (a group's
// `priority = "header:X-Priority"`): under overload the lowest present is
// shed first.
type Priority string

// The priorities sluice knows (gate/spec's levels).
const (
	PriorityCritical  Priority = "critical"
	PriorityDefault   Priority = "default"
	PrioritySheddable Priority = "sheddable"
)

// Tags say who sends a request and what it is worth: its priority, its
// tenant (a group's key, `key = "header:X-Tenant"`), and its cost in the
// units of the group's rate. The zero value of a field sets no header.
type Tags struct {
	Priority Priority
	Tenant   string
	// Cost is the request's cost in rate units (0: none sent, the group's
	// own cost applies).
	Cost int
}

// Headers names the request headers the tags go into: the names a sluice
// config reads them from (a group's key and priority). Zero fields: the
// names of DefaultHeaders.
type Headers struct {
	Priority, Tenant, Cost string
}

// DefaultHeaders are the names sluice's example configs and lab use:
// X-Priority, X-Tenant, and X-Cost.
var DefaultHeaders = Headers{Priority: "X-Priority", Tenant: "X-Tenant", Cost: "X-Cost"}

func (h Headers) withDefaults() Headers {
	if h.Priority == "" {
		h.Priority = DefaultHeaders.Priority
	}
	if h.Tenant == "" {
		h.Tenant = DefaultHeaders.Tenant
	}
	if h.Cost == "" {
		h.Cost = DefaultHeaders.Cost
	}
	h.Priority = http.CanonicalHeaderKey(h.Priority)
	h.Tenant = http.CanonicalHeaderKey(h.Tenant)
	h.Cost = http.CanonicalHeaderKey(h.Cost)
	return h
}

func (h Headers) check() error {
	for _, n := range [...]string{h.Priority, h.Tenant, h.Cost} {
		if !validName(n) {
			return fmt.Errorf("client: header name %q is not a valid field name", n)
		}
	}
	if h.Priority == h.Tenant || h.Priority == h.Cost || h.Tenant == h.Cost {
		return fmt.Errorf("client: the priority, tenant and cost headers must differ, got %q, %q, %q", h.Priority, h.Tenant, h.Cost)
	}
	return nil
}

func (t Tags) check() error {
	switch t.Priority {
	case "", PriorityCritical, PriorityDefault, PrioritySheddable:
	default:
		return fmt.Errorf("client: priority %q: want %q, %q or %q", t.Priority, PriorityCritical, PriorityDefault, PrioritySheddable)
	}
	if !validValue(t.Tenant) {
		return fmt.Errorf("client: tenant %q is not a valid header value", t.Tenant)
	}
	if t.Cost < 0 {
		return fmt.Errorf("client: cost must not be negative, got %d", t.Cost)
	}
	return nil
}

// over returns t with the fields o sets taken from o.
func (t Tags) over(o Tags) Tags {
	if o.Priority != "" {
		t.Priority = o.Priority
	}
	if o.Tenant != "" {
		t.Tenant = o.Tenant
	}
	if o.Cost != 0 {
		t.Cost = o.Cost
	}
	return t
}

// tagValues are a Tags' header values, built once.
type tagValues struct {
	tags                   Tags
	priority, tenant, cost []string
}

func (t Tags) values() tagValues {
	v := tagValues{tags: t}
	if t.Priority != "" {
		v.priority = []string{string(t.Priority)}
	}
	if t.Tenant != "" {
		v.tenant = []string{t.Tenant}
	}
	if t.Cost != 0 {
		v.cost = []string{strconv.Itoa(t.Cost)}
	}
	return v
}

// values returns the header values of t, reusing the Client's own when t
// is its Tags.
func (c *Client) values(t Tags) tagValues {
	if t == c.tagVals.tags {
		return c.tagVals
	}
	return t.values()
}

type tagsKey struct{}

// WithTags returns a context whose requests carry t (its set fields over
// the Client's Tags). A request that already has one of the headers keeps
// it.
func WithTags(ctx context.Context, t Tags) context.Context {
	return context.WithValue(ctx, tagsKey{}, t)
}

// TagsOf returns the tags of ctx's requests: the Client's Config.Tags with
// those of WithTags over them.
func (c *Client) TagsOf(ctx context.Context) Tags {
	t := c.cfg.Tags
	if o, ok := ctx.Value(tagsKey{}).(Tags); ok {
		t = t.over(o)
	}
	return t
}

// Headers returns the header names the Client sets its tags under.
func (c *Client) Headers() Headers { return c.cfg.Headers }

// missing reports whether h lacks a header the values would set.
func (v tagValues) missing(h http.Header, n Headers) bool {
	return (v.priority != nil && h[n.Priority] == nil) ||
		(v.tenant != nil && h[n.Tenant] == nil) ||
		(v.cost != nil && h[n.Cost] == nil)
}

// set sets on h the values that h lacks.
func (v tagValues) set(h http.Header, n Headers) {
	if v.priority != nil && h[n.Priority] == nil {
		h[n.Priority] = v.priority
	}
	if v.tenant != nil && h[n.Tenant] == nil {
		h[n.Tenant] = v.tenant
	}
	if v.cost != nil && h[n.Cost] == nil {
		h[n.Cost] = v.cost
	}
}

// validName reports whether s is a field name: an RFC 9110 token.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// validValue reports whether s may be a field value: no control character
// but horizontal tab (RFC 9110 §5.5), no space or tab at either end.
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return s == strings.Trim(s, " \t")
}
