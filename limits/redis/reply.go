package redis

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice/limits"
)

var errReply = errors.New("limits/redis: malformed script reply")

// parseReply reads a script's reply to one request into a Result of
// capacity limit; see nextReply.
func parseReply(s string, limit int64) (limits.Result, error) {
	r, rest, err := nextReply(s, limit)
	if err == nil && rest != "" {
		err = errReply
	}
	return r, err
}

// nextReply reads the first reply of a script's replies to a batch: four
// decimal integers "allowed remaining retry reset" (durations in ns, retry
// -1 meaning never), separated by single spaces, as are the replies. It
// returns the Result of capacity limit and the replies after it. Anything
// else is an error: the decisions then fall back. It does not allocate.
func nextReply(s string, limit int64) (limits.Result, string, error) {
	var f [4]int64
	for i := range f {
		v, rest, ok := leadingInt(s)
		if !ok {
			return limits.Result{}, "", errReply
		}
		f[i] = v
		s = rest
		if s == "" {
			if i < len(f)-1 {
				return limits.Result{}, "", errReply
			}
			break
		}
		if s[0] != ' ' || len(s) == 1 {
			return limits.Result{}, "", errReply
		}
		s = s[1:]
	}
	allowed, remaining, retry, reset := f[0], f[1], f[2], f[3]
	if allowed < 0 || allowed > 1 || remaining < 0 || remaining > limit || retry < -1 || reset < 0 {
		return limits.Result{}, "", errReply
	}
	r := limits.Result{
		Allowed:    allowed == 1,
		Limit:      limit,
		Remaining:  remaining,
		RetryAfter: time.Duration(retry),
		ResetAfter: time.Duration(reset),
	}
	if retry == -1 {
		r.RetryAfter = limits.InfDuration
	}
	return r, s, nil
}

// leadingInt parses an optional '-' and 1 to 18 decimal digits at the start
// of s, in canonical form (no leading zero, no "-0"), without allocating.
func leadingInt(s string) (v int64, rest string, ok bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	i := 0
	for i < len(s) && i < 19 && s[i] >= '0' && s[i] <= '9' {
		v = v*10 + int64(s[i]-'0')
		i++
	}
	if i == 0 || i > 18 || (s[0] == '0' && (i > 1 || neg)) {
		return 0, "", false
	}
	if neg {
		v = -v
	}
	return v, s[i:], true
}
