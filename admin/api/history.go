package api

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// History is GET /v1/history: columns of points, oldest first, on one time
// axis shared by every series.
type History struct {
	Interval float64       `json:"interval_seconds"`
	Capacity int           `json:"capacity"`
	Time     []int64       `json:"time"` // unix milliseconds
	CPU      Series        `json:"cpu"`
	Memory   Series        `json:"memory"`
	Groups   []GroupSeries `json:"groups"`
}

// GroupSeries is one group's columns in History.
type GroupSeries struct {
	Name     string  `json:"name"`
	Law      string  `json:"law"`
	Quantile float64 `json:"quantile"`
	// Series are the columns by name, such as "limit", "in_flight" and
	// "p99".
	Series map[string]Series `json:"series"`
	// RejectedByReason holds the reasons that rejected anything in the
	// window, in rejections per second.
	RejectedByReason map[string]Series `json:"rejected_by_reason"`
}

// Series is a column of figures; a figure not known (NaN) is null.
type Series []float64

// MarshalJSON implements json.Marshaler: six significant digits, NaN and
// infinities as null.
func (s Series) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+8*len(s))
	b = append(b, '[')
	for i, x := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, x, 'g', 6, 64)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON implements json.Unmarshaler: null is NaN.
func (s *Series) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*s = nil
		return nil
	}
	var xs []*float64
	if err := json.Unmarshal(b, &xs); err != nil {
		return err
	}
	*s = make(Series, len(xs))
	for i, x := range xs {
		(*s)[i] = math.NaN()
		if x != nil {
			(*s)[i] = *x
		}
	}
	return nil
}
