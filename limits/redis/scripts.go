package redis

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
)

//go:embed lua/*.lua
var lua embed.FS

// script is one Lua script: its source and the SHA-1 that EVALSHA names it
// by. A script is sent whole (EVAL, which also caches it in Redis) only when
// Redis answers NOSCRIPT: after a restart, a failover, or SCRIPT FLUSH.
type script struct {
	src string
	sha string
}

func newScript(parts ...string) *script {
	var src string
	for _, p := range parts {
		src += p
	}
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// file returns an embedded script file.
func file(name string) string {
	b, err := lua.ReadFile("lua/" + name)
	if err != nil {
		panic("limits/redis: missing script " + name) // embedded at build time
	}
	return string(b)
}

// A limiter script is a clock, the shared helpers and an algorithm. The
// production clock is Redis's TIME; the tests build the same scripts with a
// clock read from the arguments (export_test.go), which exists only in the
// test binary, so a production script can never trust a node's clock.
func limiterScripts(clock string) map[Algorithm]*script {
	lib := file("lib.lua")
	gcra := newScript(clock, lib, file("gcra_state.lua"), file("gcra.lua"))
	return map[Algorithm]*script{
		TokenBucket:   gcra,
		LeakyBucket:   gcra,
		FixedWindow:   newScript(clock, lib, file("fw_state.lua"), file("fixed.lua")),
		SlidingWindow: newScript(clock, lib, file("sliding.lua")),
	}
}

// renewalScripts are the renewal scripts of leased mode (lease.lua) on the
// stock of each leasable algorithm, with the same clock.
func renewalScripts(clock string) map[Algorithm]*script {
	lib := file("lib.lua")
	gcra := newScript(clock, lib, file("gcra_state.lua"), file("lease_gcra.lua"), file("lease.lua"))
	return map[Algorithm]*script{
		TokenBucket: gcra,
		LeakyBucket: gcra,
		FixedWindow: newScript(clock, lib, file("fw_state.lua"), file("lease_fw.lua"), file("lease.lua")),
	}
}

var (
	scripts     = limiterScripts(file("clock.lua"))
	renewals    = renewalScripts(file("clock.lua"))
	nodesScript = newScript(file("clock.lua"), file("nodes.lua"))
)
