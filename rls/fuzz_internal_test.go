package rls

import (
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// fuzzMapping overlaps on purpose: a wildcard before a fixed value of the
// same key, entries of several lengths, several wildcards.
var fuzzMapping = Mapping{Domains: []Domain{{Name: "edge", Descriptors: []Descriptor{
	{Entries: []Entry{{Key: "remote_address"}}, Group: "a"},
	{Entries: []Entry{{Key: "generic_key", Value: "x"}}, Group: "b"},
	{Entries: []Entry{{Key: "generic_key"}}, Group: "c"},
	{Entries: []Entry{{Key: "generic_key", Value: "y"}}, Group: "never: c takes y first"},
	{Entries: []Entry{{Key: "tenant"}, {Key: "header_match", Value: "premium"}}, Group: "d"},
	{Entries: []Entry{{Key: "tenant"}, {Key: "path"}, {Key: "method"}}, Group: "e"},
	{Entries: []Entry{{Key: "k", Value: ""}, {Key: "k", Value: "1"}}, Group: "f"},
}}}}

// oracle is lookup written the plain way: the first descriptor, in the
// mapping's order, whose entries match one by one.
func oracle(d Domain, entries []*rlv3.RateLimitDescriptor_Entry) (group, key string, ok bool) {
outer:
	for _, ds := range d.Descriptors {
		if len(ds.Entries) != len(entries) {
			continue
		}
		var vals []string
		for i, e := range ds.Entries {
			if entries[i].Key != e.Key {
				continue outer
			}
			if e.Value == "" {
				vals = append(vals, entries[i].Value)
			} else if entries[i].Value != e.Value {
				continue outer
			}
		}
		return ds.Group, strings.Join(vals, keySep), true
	}
	return "", "", false
}

// FuzzDescriptorMapping checks lookup against the oracle on any entries
// (lines of "key=value").
func FuzzDescriptorMapping(f *testing.F) {
	for _, s := range []string{
		"remote_address=192.0.2.1", "generic_key=x", "generic_key=y", "generic_key=", "tenant=t\nheader_match=premium",
		"tenant=t\nheader_match=basic", "tenant=t\npath=/a\nmethod=GET", "tenant=\npath=\nmethod=", "k=\nk=1", "k=1\nk=1",
		"remote_address", "", "=", "remote_address=a\x1fb", "tenant=a\x1fb\npath=c\nmethod=d",
	} {
		f.Add(s)
	}
	if err := fuzzMapping.Validate(); err != nil {
		f.Fatal(err)
	}
	c := compile(fuzzMapping, nil)
	d := c.domains["edge"]
	f.Fuzz(func(t *testing.T, s string) {
		var entries []*rlv3.RateLimitDescriptor_Entry
		if s != "" {
			for _, line := range strings.Split(s, "\n") {
				k, v, _ := strings.Cut(line, "=")
				entries = append(entries, &rlv3.RateLimitDescriptor_Entry{Key: k, Value: v})
			}
		}
		ds, key, ok := d.lookup(entries)
		wantGroup, wantKey, wantOK := oracle(fuzzMapping.Domains[0], entries)
		group := ""
		if ok {
			group = ds.Group
		}
		if ok != wantOK || group != wantGroup || key != wantKey {
			t.Fatalf("lookup(%q) = %q, %q, %v; the oracle says %q, %q, %v", s, group, key, ok, wantGroup, wantKey, wantOK)
		}
	})
}
