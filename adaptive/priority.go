package adaptive

import "strconv"

// Priority is a request's importance: higher is more important, served first
// from the queue and shed last. Levels between the named ones are allowed.
type Priority uint8

// Named priority levels.
const (
	Sheddable Priority = 0
	Default   Priority = 4
	Critical  Priority = 7

	// NumPriorities is the number of levels: valid priorities are 0..Critical.
	NumPriorities = int(Critical) + 1
)

// String returns "critical", "default", "sheddable" or the level's number.
func (p Priority) String() string {
	switch p {
	case Sheddable:
		return "sheddable"
	case Default:
		return "default"
	case Critical:
		return "critical"
	}
	return strconv.Itoa(int(p))
}

// ParsePriority parses a level name or a number 0..7.
func ParsePriority(s string) (Priority, bool) {
	switch s {
	case "sheddable":
		return Sheddable, true
	case "default":
		return Default, true
	case "critical":
		return Critical, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > int(Critical) {
		return 0, false
	}
	return Priority(n), true
}

// Floor is the lowest priority admitted and the reason given to those below it.
// The zero value admits everything. It is a plain value: the gate stores it in
// an atomic (see Pack) and checks each request against it without locks.
type Floor struct {
	Priority Priority
	Reason   RejectReason
}

// Admit reports whether a request of priority p passes the floor, and if not, why.
func (f Floor) Admit(p Priority) (bool, RejectReason) {
	if p < f.Priority {
		return false, f.Reason
	}
	return true, RejectNone
}

// Max returns the more restrictive of two floors (f on a tie).
func (f Floor) Max(o Floor) Floor {
	if o.Priority > f.Priority {
		return o
	}
	return f
}

// Pack encodes the floor in a uint32 for an atomic store; UnpackFloor inverts it.
func (f Floor) Pack() uint32 { return uint32(f.Priority)<<8 | uint32(f.Reason) }

// UnpackFloor decodes a Pack result.
func UnpackFloor(v uint32) Floor {
	return Floor{Priority: Priority(v >> 8), Reason: RejectReason(v)}
}
