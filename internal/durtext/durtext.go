// Package durtext writes a time.Duration as text where a struct is encoded
// ("250ms", "1m"; a bare number is refused on the way in), so that one Go
// type can hold durations as time.Duration, for Go literals such as
// 500*time.Millisecond, and still be the JSON and TOML of a file or an API
// that write them as text: the Duration type, and views of structs in which
// each time.Duration field is a Duration (View, MarshalJSON, UnmarshalJSON).
// gate/spec's types are encoded this way, as the config file and the admin
// API write them.
//
// It imports nothing of sluice's but internal/check. Everything in it is
// safe for concurrent use.
package durtext

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/check"
)

// Duration is a time.Duration written as a Go duration string such as
// "250ms", "2s" or "1m30s" (encoding.TextMarshaler, so in TOML and JSON
// alike). A bare number is refused: "250" could mean milliseconds or
// seconds, and a config is no place to guess.
//
// The zero value is 0s; what zero means (none, off, default) is documented on
// each field that holds a Duration.
type Duration time.Duration

// String formats d without the zero tails time.Duration.String adds, so one
// minute is "1m" rather than "1m0s". The result parses back to d.
func (d Duration) String() string { return check.Dur(time.Duration(d)) }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. It accepts what
// time.ParseDuration accepts, and nothing else.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Parse wraps time.ParseDuration with a message an operator can act on: a
// number without a unit is the common mistake.
func Parse(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: write a number with a unit, such as \"250ms\" or \"2s\"", s)
	}
	return v, nil
}

// Type is time.Duration's reflect.Type; Text is Duration's.
var (
	Type = reflect.TypeFor[time.Duration]()
	Text = reflect.TypeFor[Duration]()
)

// MarshalJSON encodes the struct *v as encoding/json would, but each
// time.Duration in it (nested structs, pointers to them and slices of them
// included) as a Duration: the body of a MarshalJSON method of v's type.
func MarshalJSON(v any) ([]byte, error) { return json.Marshal(View(v)) }

// UnmarshalJSON decodes b onto the struct *v as encoding/json would
// (fields b does not name keep their values), but each time.Duration from
// a Duration's text: the body of an UnmarshalJSON method of v's type. An
// encoding/json error names the view's types, Text for a duration.
func UnmarshalJSON(b []byte, v any) error {
	w := View(v)
	if err := json.Unmarshal(b, w); err != nil {
		return err
	}
	Back(w, v)
	return nil
}

// View returns a pointer to a copy of *v (v a pointer to a struct) of its
// view type: the same fields and tags, but a Duration for each
// time.Duration and the view of each struct that holds one. The view type
// has none of v's methods (so a MarshalJSON of v's may encode its view), and
// no unexported fields. Back copies a view back.
func View(v any) any {
	src := reflect.ValueOf(v).Elem()
	w := reflect.New(viewOf(src.Type()).view)
	convert(w.Elem(), src)
	return w.Interface()
}

// Back copies the view w (from View) into *v.
func Back(w, v any) { convert(reflect.ValueOf(v).Elem(), reflect.ValueOf(w).Elem()) }

// A shape pairs a type with its view type.
type shape struct {
	view  reflect.Type
	index []int // struct: the field of the type each field of the view is
}

var shapes sync.Map // reflect.Type → *shape

// viewOf returns t's shape; its view is t itself when t holds no duration.
func viewOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := &shape{view: t}
	switch t.Kind() {
	case reflect.Int64:
		if t == Type {
			s.view = Text
		}
	case reflect.Pointer:
		s.view = reflect.PointerTo(viewOf(t.Elem()).view)
	case reflect.Slice:
		s.view = reflect.SliceOf(viewOf(t.Elem()).view)
	case reflect.Struct:
		s = structView(t)
	}
	actual, _ := shapes.LoadOrStore(t, s)
	return actual.(*shape)
}

// structView is the shape of the struct type t: t itself if no field holds
// a duration, else a struct of t's exported fields with their views. (A
// map's values are left as they are.)
func structView(t reflect.Type) *shape {
	var fields []reflect.StructField
	var index []int
	changed := false
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if v := viewOf(f.Type).view; v != f.Type {
			f.Type, changed = v, true
		}
		f.Index, f.Offset = nil, 0
		fields = append(fields, f)
		index = append(index, i)
	}
	if !changed {
		return &shape{view: t}
	}
	return &shape{view: reflect.StructOf(fields), index: index}
}

// convert sets dst from src, where one's type is the other's view.
func convert(dst, src reflect.Value) {
	if dst.Type() == src.Type() {
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Int64:
		dst.SetInt(src.Int())
	case reflect.Pointer:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		convert(dst.Elem(), src.Elem())
	case reflect.Slice:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			convert(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		index := viewOf(src.Type()).index // src is the type, dst its view
		viewToType := index == nil
		if viewToType {
			index = viewOf(dst.Type()).index
		}
		for j, i := range index {
			if viewToType {
				convert(dst.Field(i), src.Field(j))
			} else {
				convert(dst.Field(j), src.Field(i))
			}
		}
	}
}
