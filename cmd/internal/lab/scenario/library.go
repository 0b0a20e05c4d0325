package scenario

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Library is a set of named contenders that scenario files build on with
// `like = "NAME"`: a file of [[contender]] tables, opening with a # header
// like a scenario. An entry may itself be like an earlier one. The lab
// ships one (cmd/internal/lab/contenders.toml): `sluice run` with each control
// law, so that every scenario runs the same policies and a policy is
// written down once.
type Library struct {
	Header     string
	contenders map[string]Contender // resolved: no Like left
	order      []string
}

// ParseLibrary reads a library from src; file names it in errors. Every
// problem is reported, not just the first.
func ParseLibrary(file string, src []byte) (*Library, error) {
	var raw struct {
		Contenders []Contender `toml:"contender"`
	}
	errs, err := decode(file, src, &raw)
	if err != nil {
		return nil, err
	}
	lib := &Library{Header: header(src), contenders: map[string]Contender{}}
	if lib.Header == "" {
		errs = append(errs, errors.New("the file must open with a # header that explains the contenders"))
	}
	for i, c := range raw.Contenders {
		if c.Like != "" {
			base, ok := lib.contenders[c.Like]
			if !ok {
				errs = append(errs, fmt.Errorf("contender[%d] %q: like %q: no such contender earlier in the file", i, c.Name, c.Like))
				continue
			}
			c = c.over(base, nil)
		}
		if _, dup := lib.contenders[c.Name]; dup {
			errs = append(errs, fmt.Errorf("contender %q listed twice", c.Name))
			continue
		}
		if cerrs := c.validate(i); len(cerrs) > 0 {
			errs = append(errs, cerrs...)
			continue
		}
		lib.contenders[c.Name] = c
		lib.order = append(lib.order, c.Name)
	}
	if len(errs) > 0 {
		for i, e := range errs {
			errs[i] = fmt.Errorf("scenario: %s: %w", file, e)
		}
		return nil, errors.Join(errs...)
	}
	return lib, nil
}

// Names lists the library's contenders in file order.
func (l *Library) Names() []string {
	if l == nil {
		return nil
	}
	return slices.Clone(l.order)
}

// Get returns the named contender, fully resolved.
func (l *Library) Get(name string) (Contender, bool) {
	if l == nil {
		return Contender{}, false
	}
	c, ok := l.contenders[name]
	return c, ok
}

// over returns c completed by base: every field c leaves empty is base's;
// files and vars merge, c's entries winning; between base's vars and c's
// come mid (a scenario's [vars]), so a scenario overrides a library's
// defaults and a contender overrides its scenario.
func (c Contender) over(base Contender, mid map[string]string) Contender {
	out := base
	out.Like = c.Like
	out.Name = c.Name
	if out.Name == "" {
		out.Name = c.Like
	}
	pick := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	pick(&out.Kind, c.Kind)
	pick(&out.URL, c.URL)
	pick(&out.Ready, c.Ready)
	pick(&out.Metrics, c.Metrics)
	pick(&out.LimitMetric, c.LimitMetric)
	pick(&out.InflightMetric, c.InflightMetric)
	pick(&out.RateMetric, c.RateMetric)
	if len(c.Command) > 0 {
		out.Command = slices.Clone(c.Command)
	}
	if len(c.Requires) > 0 {
		out.Requires = slices.Clone(c.Requires)
	}
	if c.StartTimeout != 0 {
		out.StartTimeout = c.StartTimeout
	}
	if c.Retry != nil {
		out.Retry = c.Retry
	}
	out.Files = merged(base.Files, c.Files)
	out.Vars = merged(base.Vars, mid, c.Vars)
	return out
}

// merged is the union of maps, later ones winning; nil when all are empty.
func merged(ms ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range ms {
		if len(m) == 0 {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, m)
	}
	return out
}
