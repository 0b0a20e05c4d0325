package sim

// ref names a request slot at one generation; a ref whose generation no longer
// matches the slot's is stale (the request left and the slot was reused).
type ref struct {
	id  int32
	gen uint32
}

// deque is a growable ring buffer of refs, used for the gate's per-priority wait
// queues and the backend's FIFO. Entries that left by other means are skipped
// lazily by the owner (see live checks in gate.go and backend.go).
type deque struct {
	buf  []ref
	head int
	n    int
}

func (d *deque) len() int { return d.n }

func (d *deque) grow() {
	nb := make([]ref, max(16, 2*len(d.buf)))
	for i := 0; i < d.n; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(r ref) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.n)%len(d.buf)] = r
	d.n++
}

func (d *deque) pushFront(r ref) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = r
	d.n++
}

func (d *deque) popFront() ref {
	r := d.buf[d.head]
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	return r
}

func (d *deque) popBack() ref {
	d.n--
	return d.buf[(d.head+d.n)%len(d.buf)]
}

// compact drops the entries for which keep is false, preserving order.
func (d *deque) compact(keep func(ref) bool) {
	j := 0
	for i := 0; i < d.n; i++ {
		r := d.buf[(d.head+i)%len(d.buf)]
		if keep(r) {
			d.buf[(d.head+j)%len(d.buf)] = r
			j++
		}
	}
	d.n = j
}
