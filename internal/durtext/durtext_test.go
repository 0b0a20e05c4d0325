package durtext

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Wait time.Duration `json:"wait,omitempty"`
	N    int           `json:"n"`
}

type outer struct {
	Name   string        `json:"name"`
	Period time.Duration `json:"period"`
	In     inner         `json:"in"`
	Ptr    *inner        `json:"ptr,omitempty"`
	List   []inner       `json:"list"`
	Plain  struct{ A int }
	hidden int
}

func TestViewRoundTrip(t *testing.T) {
	o := outer{Name: "x", Period: 90 * time.Second, In: inner{Wait: 250 * time.Millisecond, N: 2},
		Ptr: &inner{Wait: time.Hour}, List: []inner{{Wait: time.Millisecond}}, hidden: 7}
	b, err := MarshalJSON(&o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"x","period":"1m30s","in":{"wait":"250ms","n":2},"ptr":{"wait":"1h","n":0},"list":[{"wait":"1ms","n":0}],"Plain":{"A":0}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	back := outer{hidden: 7, Name: "kept"}
	if err := UnmarshalJSON([]byte(`{"period":"1m30s","in":{"wait":"250ms","n":2},"ptr":{"wait":"1h"},"list":[{"wait":"1ms"}]}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != "kept" || back.hidden != 7 || back.Period != o.Period || back.In != o.In || *back.Ptr != *o.Ptr || back.List[0] != o.List[0] {
		t.Fatalf("back %+v, want %+v", back, o)
	}
}

func TestUnmarshalRefusesANumber(t *testing.T) {
	var o outer
	err := UnmarshalJSON([]byte(`{"period": 250}`), &o)
	var te *json.UnmarshalTypeError
	if !asTypeError(err, &te) || te.Type != Text {
		t.Fatalf("got %v, want an UnmarshalTypeError of Duration", err)
	}
	err = UnmarshalJSON([]byte(`{"period": "250"}`), &o)
	if err == nil || !strings.Contains(err.Error(), `invalid duration "250": write a number with a unit`) {
		t.Fatalf("got %v", err)
	}
}

func asTypeError(err error, te **json.UnmarshalTypeError) bool {
	e, ok := err.(*json.UnmarshalTypeError)
	*te = e
	return ok
}

func TestNoDurationNoView(t *testing.T) {
	type plain struct {
		A int
		b string
	}
	if v := View(&plain{A: 1, b: "x"}).(*plain); v.A != 1 || v.b != "x" {
		t.Fatalf("a struct without a duration is its own view, got %+v", v)
	}
}
