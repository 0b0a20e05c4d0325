package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/adaptive"
	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate"
	"github.com/sluicehq/sluice/gate/spec"
	"github.com/sluicehq/sluice/internal/durtext"
)

// keepField is the one PATCH field that is not a group field.
const keepField = "keep_on_reload"

// patch is a decoded PATCH body.
type patch struct {
	// group is the group as it should be: the current one with the body's
	// fields set.
	group spec.Group
	// keep is the body's keep_on_reload.
	keep bool
	// notes say what was adjusted beyond the body (an initial limit moved
	// into new bounds).
	notes []string
}

// overridable is gate.Overridable as a set, and sections the tables its
// paths are in ("targets", "concurrency", ...).
var overridable, sections = func() (map[string]bool, map[string]bool) {
	o, s := map[string]bool{}, map[string]bool{}
	for _, p := range gate.Overridable() {
		o[p] = true
		sec, _, _ := strings.Cut(p, ".")
		s[sec] = true
	}
	return o, s
}()

// decodePatch applies a PATCH body onto a copy of cur. Every field the body
// names is checked on its own, so each problem names its field: a field that
// is not a group field, one that cannot change at runtime, and a value of the
// wrong type or form. Ranges and the rules between fields are left to the
// gate's Override, which checks the result as the file is checked.
func decodePatch(cur *spec.Group, body []byte) (patch, *apiError) {
	p := patch{group: cur.Clone()}
	var top map[string]json.RawMessage
	if err := decodeOne(body, &top); err != nil || top == nil {
		msg := "the body must be one JSON object of the fields to change, such as {\"targets\": {\"latency\": \"150ms\"}}"
		if err != nil {
			msg += ": " + err.Error()
		}
		return p, errorf(http.StatusBadRequest, "admin: "+msg)
	}
	if len(top) == 0 {
		return p, errorf(http.StatusBadRequest, "admin: the body changes nothing: name the fields to change, such as {\"targets\": {\"latency\": \"150ms\"}}")
	}
	var ps []problem
	bad := func(field, msg string) { ps = append(ps, problem{Field: field, Error: msg}) }
	given := map[string]bool{}
	for _, k := range sortedKeys(top) {
		raw := top[k]
		switch {
		case k == keepField:
			if err := json.Unmarshal(raw, &p.keep); err != nil {
				bad(k, "must be true or false, got "+kindOf(raw))
			}
		case overridable[k]: // a field of the group itself: "mode"
			if isNull(raw) {
				bad(k, "must be a value, got null")
			} else if err := decodeLeaf(&p.group, "", k, raw); err != nil {
				bad(k, err.Error())
			} else {
				given[k] = true
			}
		case !sections[k]:
			bad(k, notOverridable(k, nil))
		case k == "rate" && cur.Rate == nil:
			bad(k, "the group has no rate limit: add [group.rate] to the config file and reload")
		default:
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
				bad(k, "must be an object of the fields to change, got "+kindOf(raw))
				continue
			}
			for _, f := range sortedKeys(fields) {
				path := k + "." + f
				switch v := fields[f]; {
				case !overridable[path]:
					bad(path, notOverridable(k, &f))
				case isNull(v):
					bad(path, "must be a value, got null")
				default:
					if err := decodeLeaf(&p.group, k, f, v); err != nil {
						bad(path, err.Error())
						continue
					}
					given[path] = true
				}
			}
		}
	}
	if len(ps) > 0 {
		return p, problems(http.StatusBadRequest, ps)
	}
	p.notes = fitInitial(&p.group.Concurrency, cur.Concurrency.Law, given)
	return p, nil
}

// fitInitial moves an adaptive law's initial limit into new bounds that the
// body set without setting it, rather than refusing the change: the initial
// limit matters only at a cold start, and the limit in force is clamped to
// the new bounds anyway. It returns a note for each move.
func fitInitial(c *spec.Concurrency, law spec.Law, given map[string]bool) []string {
	if k, ok := adaptive.LookupLaw(string(law)); ok && k.FixedLimit || given["concurrency.initial"] || c.Min > c.Max {
		return nil
	}
	switch {
	case given["concurrency.max"] && c.Initial > c.Max:
		n := fmt.Sprintf("concurrency.initial lowered from %d to %d, the new max", c.Initial, c.Max)
		c.Initial = c.Max
		return []string{n}
	case given["concurrency.min"] && c.Initial < c.Min:
		n := fmt.Sprintf("concurrency.initial raised from %d to %d, the new min", c.Initial, c.Min)
		c.Initial = c.Min
		return []string{n}
	}
	return nil
}

// decodeOne decodes exactly one JSON value from b into v.
func decodeOne(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the body is empty")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more than one JSON value")
	}
	return nil
}

// decodeLeaf sets field f of table sec of g (of g itself for sec "") from
// the JSON value v, and says what is wrong with v if it cannot.
func decodeLeaf(g *spec.Group, sec, f string, v json.RawMessage) error {
	var body any = map[string]map[string]json.RawMessage{sec: {f: v}}
	if sec == "" {
		body = map[string]json.RawMessage{f: v}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return errors.New("is not valid JSON")
	}
	err = decodeOne(b, g)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return fmt.Errorf("must be %s, got %s", typeWord(te.Type), te.Value)
	}
	return err
}

// notOverridable explains why a body field is refused: it is not a field
// of the group at all, or it cannot change at runtime.
func notOverridable(sec string, f *string) string {
	path := sec
	t, ok := jsonField(reflect.TypeFor[spec.Group](), sec)
	if f != nil {
		path += "." + *f
		_, ok = jsonField(t, *f)
	}
	if !ok {
		return "unknown field " + strconv.Quote(path) + suggest(path)
	}
	return "cannot change at runtime: edit the config file and reload"
}

// jsonField returns the type of the field of struct type t (or of what t
// points to) whose JSON name is name; false for none.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	if t == nil {
		return nil, false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for f := range t.Fields() {
		if key, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && key == name && key != "-" {
			return f.Type, true
		}
	}
	return nil, false
}

// suggest proposes the overridable field nearest to path, when one is close.
func suggest(path string) string {
	best, bestD := "", 3
	for o := range overridable {
		if d := configs.EditDistance(path, o); d < bestD || d == bestD && best != "" && o < best {
			best, bestD = o, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// typeWord names what a field of type t takes, for a message.
func typeWord(t reflect.Type) string {
	if t == durtext.Text {
		return `a duration string such as "250ms"`
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice:
		return "an array"
	}
	return "a " + t.String()
}

// kindOf names the kind of a JSON value, for a message.
func kindOf(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// groupPath matches the "group[N]." that configs puts before a group's
// field paths.
var groupPath = regexp.MustCompile(`^group\[\d+\]\.`)

// overrideError turns a refused override into an answer: the config's
// problems one by one, with paths as PATCH names them, or the gate's
// refusal.
func overrideError(name string, err error) *apiError {
	var ce configs.Errors
	switch {
	case errors.Is(err, configs.ErrNoGroup), errors.Is(err, gate.ErrNoGroup):
		return noGroup(name)
	case errors.As(err, &ce):
		ps := make([]problem, len(ce))
		for i, e := range ce {
			ps[i] = problem{Field: groupPath.ReplaceAllString(e.Path, ""), Error: e.Msg}
		}
		return problems(http.StatusUnprocessableEntity, ps)
	}
	return errorf(http.StatusUnprocessableEntity, "admin: "+err.Error())
}

func (s *Server) patchGroup(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, aerr := readBody(r, s.p.MaxBodyBytes)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.groupConfig(name)
	if cur == nil {
		writeError(w, noGroup(name))
		return
	}
	p, aerr := decodePatch(cur, body)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	// Checked as the file is, then applied as the gate runs it.
	next, err := s.config().ReplaceGroup(p.group)
	if err != nil {
		writeError(w, overrideError(name, err))
		return
	}
	if err := s.gate.Override(next.Group(name).Clone()); err != nil {
		writeError(w, overrideError(name, err))
		return
	}
	st, ok := s.gate.Group(name)
	if !ok {
		writeError(w, noGroup(name))
		return
	}
	if st.Override != nil && p.keep {
		s.keep[name] = true
	} else {
		delete(s.keep, name)
	}
	now := s.groupConfig(name)
	notes := p.notes
	if s.keep[name] {
		notes = append(slices.Clip(notes), "kept on reload")
	}
	s.onChange(r, name, FieldChanges(cur, now), notes...)
	v := newGroupView(st, now, s.keep[name], switchedOffIn(s.gate.Status()))
	v.Notes = p.notes
	writeJSON(w, http.StatusOK, v)
}
