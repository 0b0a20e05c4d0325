package front

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/listen"
)

var errNoToken = fmt.Errorf("x: %w", listen.ErrNoToken)

// TestDoorErrorsAreTheFrontEnds: each error of a door is the front-end's
// ErrNoToken, its closed error, or prefixed with its name.
func TestDoorErrorsAreTheFrontEnds(t *testing.T) {
	if _, err := NewDoor("x", errNoToken, "127.0.0.1:0", 0, ""); !errors.Is(err, errNoToken) || !strings.Contains(err.Error(), `listen "127.0.0.1:0"`) {
		t.Fatalf("NewDoor on TCP without a token: %v", err)
	}
	if _, err := NewDoor("x", errNoToken, "unix://relative.sock", 0, ""); err == nil || !strings.HasPrefix(err.Error(), "x: ") {
		t.Fatalf("NewDoor of a bad address: %v", err)
	}

	d, err := NewDoor("x", errNoToken, "unix://"+filepath.Join(t.TempDir(), "nodir", "x.sock"), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Listen(); err == nil || !strings.HasPrefix(err.Error(), "x: listen: ") {
		t.Fatalf("Listen in a missing folder: %v", err)
	}
	tcp, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := d.Serve(tcp, net.ErrClosed); !errors.Is(err, errNoToken) || !strings.Contains(err.Error(), "bound to 127.0.0.1:") {
		t.Fatalf("Serve of TCP without a token: %v", err)
	}
	if err := d.SetToken(""); err != nil {
		t.Fatalf("SetToken(\"\") on a unix socket: %v", err)
	}

	d, _ = NewDoor("x", errNoToken, "127.0.0.1:0", 0, "tok-0123456789")
	if err := d.SetToken(""); err != errNoToken {
		t.Fatalf("SetToken(\"\") on TCP: %v", err)
	}
	d.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := errors.New("closed")
	if err := d.Serve(ln, closed); err != closed {
		t.Fatalf("Serve after Close: %v", err)
	}
}
