package main

import (
	"testing"
	"time"
)

// TestSometimes: one line per period passes, and it learns how many were held
// back since the last one.
func TestSometimes(t *testing.T) {
	var s sometimes
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at   time.Duration
		ok   bool
		held uint64
	}{
		{0, true, 0},
		{100 * time.Millisecond, false, 0},
		{999 * time.Millisecond, false, 0},
		{time.Second, true, 2},
		{1500 * time.Millisecond, false, 0},
		{5 * time.Second, true, 1},
		{5 * time.Second, false, 0},
	}
	for i, st := range steps {
		held, ok := s.allow(t0.Add(st.at), time.Second)
		if ok != st.ok || held != st.held {
			t.Errorf("step %d (t0+%v): allow = %d, %v; want %d, %v", i, st.at, held, ok, st.held, st.ok)
		}
	}
}
