package api

import (
	"encoding/json"
	"math"
	"testing"
)

func TestSeriesJSON(t *testing.T) {
	b, err := json.Marshal(Series{1, math.NaN(), 0.25, math.Inf(1), 1e-7, 123456789})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `[1,null,0.25,null,1e-07,1.23457e+08]` {
		t.Errorf("series JSON %s", b)
	}
	var s Series
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s) != 6 || s[0] != 1 || !math.IsNaN(s[1]) || s[2] != 0.25 || !math.IsNaN(s[3]) || s[5] != 1.23457e+08 {
		t.Errorf("decoded %v", s)
	}
	if err := json.Unmarshal([]byte(`[1, "x"]`), &s); err == nil {
		t.Error("a string in a series decoded")
	}
}
