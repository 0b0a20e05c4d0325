package redis

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
)

// The rueidis arms of BenchmarkDecisions and BenchmarkINCR: the same
// decisions and the same INCR through rueidis (github.com/redis/rueidis),
// whose client pipelines the commands of concurrent callers on shared
// connections by itself, so that the two clients are compared in one run.

// newRueidis is a rueidis client of srv with auto-pipelining (its default)
// and no client-side cache.
func newRueidis(b *testing.B, srv *server) rueidis.Client {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{srv.Addr()}, ForceSingleClient: true, DisableCache: true, DisableRetry: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// rueidisScript is the limiter's script for rueidis: Exec sends EVALSHA,
// and EVAL when Redis has lost the script.
func rueidisScript(l *Limiter) *rueidis.Lua { return rueidis.NewLuaScript(l.scr.src) }

// rueidisArgs are the script's keys and arguments for reqs under q, as
// command.
func rueidisArgs(q *quota, reqs []*request) (keys, args []string) {
	keys = make([]string, len(reqs))
	args = make([]string, 2+len(reqs))
	for i, r := range reqs {
		keys[i] = r.key
		args[2+i] = strconv.FormatInt(r.n, 10)
	}
	args[0], args[1] = amount(q.a1), amount(q.a2)
	return keys, args
}

func amount(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	panic("unexpected amount")
}

// rueidisBatches makes l's batcher call Redis through c, with workers
// batches on the wire at once.
func rueidisBatches(l *Limiter, c rueidis.Client, workers int) {
	lua := rueidisScript(l)
	l.b.close()
	l.b = newBatcher(l, func(q *quota, reqs []*request) (string, error) {
		keys, args := rueidisArgs(q, reqs)
		return lua.Exec(context.Background(), c, keys, args).ToString()
	}, workers)
}

// rueidisDecide decides one request with a script call of its own through
// c (auto-pipelined with the other callers'), within the store's budget.
func rueidisDecide(l *Limiter, c rueidis.Client, lua *rueidis.Lua, key string) error {
	q := l.q.Load()
	budget := startBudget(l.s.p.Timeout)
	defer budget.stop()
	keys, args := rueidisArgs(q, []*request{{key: l.prefix + key + "}", n: 1}})
	s, err := lua.Exec(budget, c, keys, args).ToString()
	if err != nil {
		return err
	}
	_, err = parseReply(s, q.limit)
	return err
}
