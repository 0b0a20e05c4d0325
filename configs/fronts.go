package configs

import (
	"strconv"
	"strings"
)

// Permit is the [permit] section: the permit service, a front-end beside
// the proxy for work sluice does not proxy (queue consumers, batch jobs,
// database clients): a worker acquires a permit of a group before a piece
// of work and releases it after, with its outcome and latency (package
// permit). Absent: no permit service.
type Permit struct {
	// Listen is "host:port" or "unix:///path.sock". A TCP listener needs
	// TokenFile; a unix socket is guarded by its file mode. Default
	// "127.0.0.1:7070".
	Listen string `toml:"listen" json:"listen"`
	// TokenFile holds the bearer token every call on a TCP listener must
	// carry (Authorization: Bearer TOKEN, or gRPC metadata
	// "authorization"), read as admin.token_file is. Required on TCP;
	// refused on a unix socket, which does not use it. Read again by a
	// reload.
	TokenFile string `toml:"token_file" json:"token_file"`
	// SocketMode is the file mode of a unix socket, written in octal
	// (0o660: its owner and group may connect). Default 0o660.
	SocketMode int `toml:"socket_mode" json:"socket_mode"`
	// Lease is how long a permit may be held before it is counted as
	// dropped and its slot freed, for the groups not in Groups; from 1ms
	// to 24h. Default 30s.
	Lease Duration `toml:"lease" json:"lease"`
	// MaxLeases bounds the permits held at once, over every group, from 1
	// to 16777216; a request beyond it is refused as concurrency. A
	// restart applies a change. Default 16384.
	MaxLeases int `toml:"max_leases" json:"max_leases"`
	// Groups sets the lease of some groups ([[permit.group]] name, lease).
	Groups []PermitGroup `toml:"group" json:"groups"`
}

// PermitGroup is one [[permit.group]]: a group's own lease.
type PermitGroup struct {
	// Name is the group's name. Required.
	Name string `toml:"name" json:"name"`
	// Lease is the group's lease, from 1ms to 24h. Required.
	Lease Duration `toml:"lease" json:"lease"`
}

// RLS is the [rls] section: Envoy's rate limit service
// (envoy.service.ratelimit.v3, ShouldRateLimit over gRPC) on the groups'
// rate limits (package rls). Through it sluice serves rate quotas only:
// Envoy reports no outcome and no latency. Absent: no rate limit service.
type RLS struct {
	// Listen is "host:port" or "unix:///path.sock" (an Envoy cluster
	// reaches a unix socket through a pipe address). A TCP listener needs
	// TokenFile. Default "unix:///run/sluice/rls.sock".
	Listen string `toml:"listen" json:"listen"`
	// TokenFile holds the bearer token every call on a TCP listener must
	// carry as gRPC metadata "authorization: Bearer TOKEN" (Envoy:
	// grpc_service.initial_metadata). Required on TCP; refused on a unix
	// socket, which does not use it. Read again by a reload.
	TokenFile string `toml:"token_file" json:"token_file"`
	// SocketMode is the file mode of a unix socket, in octal. Default
	// 0o660.
	SocketMode int `toml:"socket_mode" json:"socket_mode"`
	// Headers selects the rate-limit fields of the answers'
	// response_headers_to_add. Default "ietf".
	Headers RLSHeaders `toml:"headers" json:"headers"`
	// Domains map Envoy's domains and descriptors to groups
	// ([[rls.domain]]). A descriptor they do not map is answered OK with no
	// limit.
	Domains []RLSDomain `toml:"domain" json:"domains"`
}

// RLSHeaders names the rate-limit fields an answer carries.
type RLSHeaders string

const (
	// RLSHeadersIETF: RateLimit-Policy and RateLimit (draft -10), as the
	// proxy sends.
	RLSHeadersIETF RLSHeaders = "ietf"
	// RLSHeadersX: X-RateLimit-Limit, -Remaining and -Reset.
	RLSHeadersX RLSHeaders = "x-ratelimit"
	// RLSHeadersNone: no rate-limit fields.
	RLSHeadersNone RLSHeaders = "none"
)

// RLSDomain is one [[rls.domain]]: an Envoy rate limit domain and its
// descriptors.
type RLSDomain struct {
	// Name is the domain (the ratelimit filter's "domain"). Required.
	Name string `toml:"name" json:"name"`
	// Descriptors are matched in order; the first that matches a
	// descriptor whole decides it ([[rls.domain.descriptor]]).
	Descriptors []RLSDescriptor `toml:"descriptor" json:"descriptors"`
}

// RLSDescriptor maps one descriptor, its entries in order, to a group.
type RLSDescriptor struct {
	// Entries are the descriptor's entries, as Envoy's rate_limits actions
	// make them: {key = "remote_address"} matches any value, which becomes
	// the sluice key; {key = "generic_key", value = "checkout"} matches
	// that value only. Required.
	Entries []RLSEntry `toml:"entries" json:"entries"`
	// Group is the group whose rate limit the descriptor spends. Required.
	Group string `toml:"group" json:"group"`
}

// RLSEntry is one entry of a descriptor: a key and a value ("" for any).
type RLSEntry struct {
	Key   string `toml:"key" json:"key"`
	Value string `toml:"value,omitempty" json:"value,omitempty"`
}

func (r *PermitGroup) reset()   { *r = PermitGroup{} }
func (r *RLSDomain) reset()     { *r = RLSDomain{} }
func (r *RLSDescriptor) reset() { *r = RLSDescriptor{} }
func (r *RLSEntry) reset()      { *r = RLSEntry{} }

// maxSocketMode bounds a socket_mode: the permission bits.
const maxSocketMode = 0o777

func (p *Permit) check(ck *checker, path string, groups map[string]bool) {
	ck.frontListen(path, p.Listen, p.TokenFile, p.SocketMode)
	ck.duration(join(path, "lease"), p.Lease, ms, day)
	ck.intRange(join(path, "max_leases"), p.MaxLeases, 1, 1<<24)
	seen := map[string]bool{}
	for i, g := range p.Groups {
		at := index(join(path, "group"), i)
		if ck.groupRef(at, "name", g.Name, groups, "a group's name") && seen[g.Name] {
			ck.errorf(join(at, "name"), "group %q has a lease already", g.Name)
		}
		seen[g.Name] = true
		ck.duration(join(at, "lease"), g.Lease, ms, day)
	}
}

// groupRef checks that key, under at, names one of groups: a key left out
// is incomplete (what says what it names). It reports whether it does.
func (ck *checker) groupRef(at, key, name string, groups map[string]bool, what string) bool {
	switch {
	case name == "":
		ck.incompletef(at, "needs %s (%s)", key, what)
	case !groups[name]:
		ck.errorf(join(at, key), "no group is named %q", name)
	default:
		return true
	}
	return false
}

func (r *RLS) check(ck *checker, path string, groups map[string]bool) {
	ck.frontListen(path, r.Listen, r.TokenFile, r.SocketMode)
	oneOf(ck, join(path, "headers"), r.Headers, RLSHeadersIETF, RLSHeadersX, RLSHeadersNone)
	domains := map[string]bool{}
	for i, d := range r.Domains {
		at := index(join(path, "domain"), i)
		switch {
		case d.Name == "":
			ck.incompletef(at, "needs name (the Envoy domain)")
		case domains[d.Name]:
			ck.errorf(join(at, "name"), "domain %q is named twice", d.Name)
		}
		domains[d.Name] = true
		for j, desc := range d.Descriptors {
			dat := index(join(at, "descriptor"), j)
			ck.groupRef(dat, "group", desc.Group, groups, "the group whose rate limit it spends")
			if len(desc.Entries) == 0 {
				ck.incompletef(dat, `needs entries, such as [{ key = "remote_address" }]`)
			}
			for k, e := range desc.Entries {
				if e.Key == "" {
					ck.incompletef(index(join(dat, "entries"), k), "needs key")
				}
			}
		}
	}
}

// frontListen checks a front-end's listen address, token file and socket
// mode: a TCP listener needs a token, a unix socket a mode and no token
// (its file mode decides who connects; the servers ignore a token there).
func (c *checker) frontListen(path, listen, tokenFile string, mode int) {
	if !c.listenAddress(join(path, "listen"), listen, true) {
		return
	}
	if strings.HasPrefix(listen, "unix://") {
		c.unused(join(path, "token_file"), tokenFile != "", "on a unix socket (its file mode, socket_mode, decides who connects)")
		if mode < 0 || mode > maxSocketMode {
			hint := ""
			if d := strconv.Itoa(mode); len(d) <= 3 && strings.Trim(d, "01234567") == "" {
				hint = "; for octal " + d + ", write 0o" + d
			}
			c.errorf(join(path, "socket_mode"), "must be permission bits from 0o000 to 0o777, got %d%s", mode, hint)
		}
		return
	}
	if tokenFile == "" {
		c.errorf(join(path, "listen"), "%q is TCP: set token_file (every call carries the token), or listen on a unix socket", listen)
	}
}
