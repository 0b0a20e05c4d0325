package admin

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/durtext"
)

// Change is one runtime change made through the admin API, for the log
// (Params.OnChange): a PATCH of a group (its limits, targets or mode) or of
// its global quota, or the removal of a global quota's definition. Reloads
// are reported by Params.OnReload.
type Change struct {
	// By says who asked (Caller).
	By string
	// Request is the method and path asked: "PATCH /v1/groups/api".
	Request string
	// Group is the group changed.
	Group string
	// Fields are the settings that changed, by key path as in the config
	// file ("mode", "targets.latency", "global.rate"), with their values
	// before and after; empty for a change that left every value as it was.
	Fields []gate.FieldChange
	// Notes say more: whether the override survives reloads, what was
	// adjusted beyond the body.
	Notes []string
}

// Caller names who made a request of the admin API, for the log: the
// address it came from ("unix socket" on one) and its User-Agent.
func Caller(r *http.Request) string {
	who := r.RemoteAddr
	if who == "" || who == "@" {
		who = "unix socket"
	}
	who = "admin API from " + who
	if ua := r.UserAgent(); ua != "" {
		who += " (" + ua + ")"
	}
	return who
}

// onChange reports c to Params.OnChange, if set.
func (s *Server) onChange(r *http.Request, group string, fields []gate.FieldChange, notes ...string) {
	if s.p.OnChange == nil {
		return
	}
	s.p.OnChange(Change{By: Caller(r), Request: r.Method + " " + r.URL.Path, Group: group, Fields: fields, Notes: notes})
}

// FieldChanges lists the settings that differ between two versions of a
// group, by key path as in the config file ("mode", "concurrency.max",
// "rate.mode"), each with its value before and after as the file would
// spell it ("" for a table that is absent). Fields are compared leaf by
// leaf; a list counts as one value.
func FieldChanges(before, after *spec.Group) []gate.FieldChange {
	return diffValues(nil, "", reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem())
}

// diffValues appends the leaves of the structs a and b that differ, under
// prefix.
func diffValues(out []gate.FieldChange, prefix string, a, b reflect.Value) []gate.FieldChange {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		x, y := a.Field(i), b.Field(i)
		if reflect.DeepEqual(x.Interface(), y.Interface()) {
			continue
		}
		path := prefix + name
		if x.Kind() == reflect.Pointer && x.Type().Elem().Kind() == reflect.Struct {
			if x.IsNil() || y.IsNil() {
				out = append(out, gate.FieldChange{Path: path, From: present(x), To: present(y)})
				continue
			}
			x, y = x.Elem(), y.Elem()
		}
		if x.Kind() == reflect.Struct && !isLeaf(x.Type()) {
			out = diffValues(out, path+".", x, y)
			continue
		}
		out = append(out, gate.FieldChange{Path: path, From: leaf(x), To: leaf(y)})
	}
	return out
}

// isLeaf reports whether a struct type is one value in the file (a
// duration, a time, anything that spells itself).
func isLeaf(t reflect.Type) bool {
	_, ok := reflect.New(t).Interface().(fmt.Stringer)
	return ok
}

// present spells a table that may be absent: "(none)" or "(set)".
func present(v reflect.Value) string {
	if v.IsNil() {
		return "(none)"
	}
	return "(set)"
}

// leaf spells one value.
func leaf(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "(none)"
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.String && v.Len() == 0:
		return `""`
	case v.Type() == durtext.Type: // gate/spec's: spelled as the file does, "1m"
		return durtext.Duration(v.Int()).String()
	}
	return fmt.Sprint(v.Interface())
}

// FormatChanges spells fields in one string for a log line:
// "mode shadow→enforce, targets.latency 100ms→150ms".
func FormatChanges(fields []gate.FieldChange) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Path + " " + f.From + "→" + f.To
	}
	return strings.Join(parts, ", ")
}

// quotaChanges lists what differs between two definitions of a global
// quota, by key path under "global".
func quotaChanges(a, b gate.Quota) []gate.FieldChange {
	var out []gate.FieldChange
	add := func(name string, x, y any) {
		if x != y {
			out = append(out, gate.FieldChange{Path: "global." + name, From: fmt.Sprint(x), To: fmt.Sprint(y)})
		}
	}
	add("algorithm", a.Algorithm, b.Algorithm)
	add("rate", a.Rate, b.Rate)
	add("burst", a.Burst, b.Burst)
	add("limit", a.Limit, b.Limit)
	add("window", configs.Duration(a.Window), configs.Duration(b.Window))
	add("version", a.Version, b.Version)
	return out
}
