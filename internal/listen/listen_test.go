package listen

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		addr string
		want Reach
		err  string
	}{
		{"127.0.0.1:7070", Loopback, ""},
		{"[::1]:7070", Loopback, ""},
		{"localhost:7070", Loopback, ""},
		{"LocalHost:7070", Loopback, ""},
		{"0.0.0.0:7070", Open, ""},
		{":7070", Open, ""},
		{"10.1.2.3:7070", Open, ""},
		{"permits.internal:7070", Open, ""},
		{"unix:///run/sluice/permit.sock", Unix, ""},
		{"unix://run/permit.sock", 0, "absolute path"},
		{"127.0.0.1", 0, "host:port"},
	} {
		got, err := Of(c.addr)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Of(%q): %v, want an error about %s", c.addr, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Of(%q) = %v, %v; want %v", c.addr, got, err, c.want)
		}
	}
}

func TestListenUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.sock")
	ln, err := Listen("unix://"+path, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != DefaultSocketMode {
		t.Fatalf("socket mode %v, %v; want %v", fi.Mode().Perm(), err, DefaultSocketMode)
	}
	if OfAddr(ln.Addr()) != Unix {
		t.Fatalf("reach of %v: %v", ln.Addr(), OfAddr(ln.Addr()))
	}
	// A live socket is not taken over.
	if _, err := Listen("unix://"+path, 0); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("second Listen on a live socket: %v", err)
	}
	ln.Close()

	// A stale socket file (its listener gone without removing it) is
	// replaced, with the mode asked for.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	ln, err = Listen("unix://"+path, 0o600)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}

	// A file that is not a socket is left alone.
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o600)
	if _, err := Listen("unix://"+plain, 0); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a plain file: %v", err)
	}
}

func TestListenTCP(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if OfAddr(ln.Addr()) != Loopback {
		t.Fatalf("reach %v", OfAddr(ln.Addr()))
	}
	if OfAddr(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)}) != Open {
		t.Fatal("10.0.0.1 is not open")
	}
	if _, err := Listen("nonsense", 0); err == nil {
		t.Fatal("Listen(nonsense) succeeded")
	}
}

func TestToken(t *testing.T) {
	tok := NewToken("s3cret-token-0123456789")
	for _, c := range []struct {
		h    string
		want bool
	}{
		{"Bearer s3cret-token-0123456789", true},
		{"bearer s3cret-token-0123456789", true},
		{"Bearer  s3cret-token-0123456789 ", true},
		{"Bearer s3cret-token-012345678", false},
		{"Basic s3cret-token-0123456789", false},
		{"s3cret-token-0123456789", false},
		{"", false},
	} {
		if got := tok.Matches(c.h); got != c.want {
			t.Errorf("Matches(%q) = %v, want %v", c.h, got, c.want)
		}
	}
	if zero := NewToken(""); zero.Set() || zero.Matches("Bearer ") {
		t.Error("the zero token matches")
	}
}

// TestTap: on TCP a stream passes the tap only with exactly one
// "authorization" header with the token in force; on a unix socket every
// stream passes.
func TestTap(t *testing.T) {
	const tok = "s3cret-token-0123456789"
	g, _ := NewGuard("127.0.0.1:0", tok)
	tap := func(g *Guard, md metadata.MD) error {
		_, err := g.Tap(context.Background(), &tap.Info{FullMethodName: "/x.Y/Z", Header: md})
		return err
	}
	if err := tap(g, metadata.Pairs("authorization", "Bearer "+tok)); err != nil {
		t.Fatalf("right token: %v", err)
	}
	for _, md := range []metadata.MD{nil, metadata.Pairs("authorization", "Bearer nope"),
		metadata.Pairs("authorization", "Bearer "+tok, "authorization", "Bearer "+tok)} {
		if err := tap(g, md); status.Code(err) != codes.Unauthenticated {
			t.Errorf("metadata %v: %v, want Unauthenticated", md, err)
		}
	}
	g.SetToken("another-token-0123456789")
	if err := tap(g, metadata.Pairs("authorization", "Bearer "+tok)); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the old token after SetToken: %v", err)
	}
	u, _ := NewGuard("unix:///run/x.sock", "")
	if err := tap(u, nil); err != nil || u.NeedsToken() || !g.NeedsToken() {
		t.Fatalf("a unix socket's tap: %v (needs a token: unix %v, tcp %v)", err, u.NeedsToken(), g.NeedsToken())
	}
}

func TestGuard(t *testing.T) {
	if _, err := NewGuard("127.0.0.1:0", ""); !errors.Is(err, ErrNoToken) {
		t.Fatalf("NewGuard on TCP without a token: %v", err)
	}
	g, err := NewGuard("unix:///run/x.sock", "")
	if err != nil || !g.Allows("") {
		t.Fatalf("a unix socket's guard: %v, allows %v", err, g.Allows(""))
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	if err := g.Bind(ln); !errors.Is(err, ErrNoToken) {
		t.Fatalf("Bind of TCP without a token: %v", err)
	}
	g, _ = NewGuard("127.0.0.1:0", "s3cret-token-0123456789")
	if err := g.Bind(ln); err != nil || g.Allows("") || !g.Allows("Bearer s3cret-token-0123456789") {
		t.Fatalf("TCP guard: %v", err)
	}
	if err := g.SetToken(""); !errors.Is(err, ErrNoToken) {
		t.Fatalf("SetToken(\"\") on TCP: %v", err)
	}
	g.SetToken("another-token-0123456789")
	if g.Allows("Bearer s3cret-token-0123456789") || !g.Allows("Bearer another-token-0123456789") {
		t.Fatal("SetToken did not take")
	}
}

// TestStreamCheck: a stream's check follows the token in force, call by
// call, for the token its metadata carries.
func TestStreamCheck(t *testing.T) {
	const tok = "s3cret-token-0123456789"
	in := func(auth ...string) context.Context {
		md := metadata.MD{}
		for _, a := range auth {
			md.Append("authorization", a)
		}
		return metadata.NewIncomingContext(context.Background(), md)
	}
	u, _ := NewGuard("unix:///run/x.sock", "")
	if !u.StreamCheck(in())() {
		t.Fatal("a unix socket's stream refused")
	}
	g, _ := NewGuard("127.0.0.1:0", tok)
	good, none, wrong, two := g.StreamCheck(in("Bearer "+tok)), g.StreamCheck(in()), g.StreamCheck(in("Bearer nope")), g.StreamCheck(in("Bearer "+tok, "Bearer "+tok))
	for i := range 2 { // the second time from what the first found
		if !good() || none() || wrong() || two() {
			t.Fatalf("round %d: good %v, none %v, wrong %v, two %v", i, good(), none(), wrong(), two())
		}
	}
	g.SetToken("another-token-0123456789")
	if good() {
		t.Fatal("the old token still passes after SetToken")
	}
	g.SetToken(tok)
	if !good() {
		t.Fatal("the token set again does not pass")
	}
}

func TestDoor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.sock")
	d, err := NewDoor("unix://"+path, 0o600, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Addr() != nil {
		t.Fatal("Addr before Open")
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	if err := d.Open(ln); err != nil || d.Addr() == nil {
		t.Fatalf("Open: %v, Addr %v", err, d.Addr())
	}
	other, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := d.Open(other); !errors.Is(err, ErrOpenTwice) {
		t.Fatalf("second Open: %v", err)
	}
	if _, err := other.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a refused listener is not closed: %v", err)
	}
	d.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Close did not close the listener: %v", err)
	}
	d2, _ := NewDoor("unix://"+path, 0, "")
	d2.Close()
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := d2.Open(ln2); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after Close: %v", err)
	}
	if _, err := NewDoor("127.0.0.1:0", 0, ""); !errors.Is(err, ErrNoToken) {
		t.Fatalf("NewDoor on TCP without a token: %v", err)
	}
}

// TestSocketHasItsModeFromTheStart (issue 23, item 9): the socket's name
// never names a socket of another mode, whatever the umask: it appears by
// a rename (IN_MOVED_TO), never by a bind at that name (IN_CREATE) followed
// by a chmod (IN_ATTRIB), which left the umask's mode showing in between
// and followed a symlink put in the socket's place.
func TestSocketHasItsModeFromTheStart(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_ATTRIB|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	old := unix.Umask(0)
	ln, err := Listen("unix://"+filepath.Join(dir, "p.sock"), 0o600)
	unix.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	buf := make([]byte, 64<<10)
	n, _ := unix.Read(fd, buf) // the events are queued by the syscalls themselves
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
		off += unix.SizeofInotifyEvent + int(ev.Len)
		if name != "p.sock" {
			continue
		}
		switch {
		case ev.Mask&unix.IN_CREATE != 0:
			events = append(events, "create")
		case ev.Mask&unix.IN_ATTRIB != 0:
			events = append(events, "chmod")
		case ev.Mask&unix.IN_MOVED_TO != 0:
			events = append(events, "moved in")
		}
	}
	if strings.Join(events, ",") != "moved in" {
		t.Fatalf("events on the socket's name: %v, want it moved in once, with its mode", events)
	}
	fi, err := os.Stat(filepath.Join(dir, "p.sock"))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&fs.ModeSocket == 0 {
		t.Fatalf("socket %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}
	if a := ln.Addr().String(); a != filepath.Join(dir, "p.sock") {
		t.Fatalf("Addr %s", a)
	}
	c, err := net.Dial("unix", filepath.Join(dir, "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	ln.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind after Close: %v", ents)
	}
}
