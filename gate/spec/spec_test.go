package spec

import (
	"testing"

	"github.com/sluicehq/sluice/adaptive"
)

func TestFixedLimit(t *testing.T) {
	var custom maker
	for _, c := range []struct {
		c    Concurrency
		want bool
	}{
		{Concurrency{Law: LawFixed, Limit: 4}, true},
		{Concurrency{Law: LawAIMD}, false},
		{Concurrency{}, false},
		{Concurrency{Law: LawFixed, Custom: custom}, false}, // a custom law moves its limit
	} {
		if got := c.c.FixedLimit(); got != c.want {
			t.Errorf("%+v: FixedLimit %v, want %v", c.c, got, c.want)
		}
	}
}

// maker is a LawMaker that is never called.
type maker struct{}

func (maker) NewLaw(adaptive.Bounds) (adaptive.Law, error) { return nil, nil }
