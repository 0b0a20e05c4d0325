package permit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/permit"
	"github.com/sluicehq/sluice/permit/permitclient"
	"github.com/sluicehq/sluice/permit/permitpb"
)

// TestAnotherClientCannotReleaseByGuessing (issue 23, item 8): a second
// client holding the token learns the IDs of every slot of a table of 16
// (three rounds of 16 permits), then tries, for each slot, the IDs that
// follow the last it saw, and the victim's own ID: none releases the
// victim's permit, whether the victim is permitclient (whose permits only
// its session releases) or a plain HTTP client without a session (whose
// IDs carry a random tag). IDs were the slot and a generation counted up at
// each grant, so the slot's next ID followed from the last.
func TestAnotherClientCannotReleaseByGuessing(t *testing.T) {
	for _, victim := range []string{"permitclient", "http"} {
		t.Run(victim, func(t *testing.T) {
			const slots = 16
			e := newEnv(t, jobs(slots), permit.Params{MaxLeases: slots})
			s := serve(t, e.svc, "tcp")
			hc, base := s.httpClient()
			post := func(path, body string, out any) int {
				t.Helper()
				req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+testToken)
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode
			}
			acquire := func() permit.ID {
				var g struct{ ID string }
				if code := post("/v1/permits", `{"group":"jobs"}`, &g); code != 200 {
					t.Fatalf("acquire: %d", code)
				}
				id, err := permit.ParseID(g.ID)
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			release := func(id permit.ID) string {
				var r struct{ Result string }
				post("/v1/permits/"+id.String()+"/release", `{"outcome":"success"}`, &r)
				return r.Result
			}

			// The attacker learns the last ID of every slot.
			last := map[uint32]permit.ID{}
			for range 3 {
				var held []permit.ID
				for range slots {
					held = append(held, acquire())
				}
				for _, id := range held {
					last[uint32(id)] = id
					if r := release(id); r != "released" {
						t.Fatalf("the attacker's own release: %s", r)
					}
				}
			}

			// The victim takes a permit.
			var done func() error
			var victimID permit.ID
			switch victim {
			case "permitclient":
				c := s.client(t, permitclient.GRPC) // its session is metadata the attacker never sees
				p, err := c.Acquire(context.Background(), permitclient.Request{Group: "jobs"})
				if err != nil {
					t.Fatal(err)
				}
				victimID = permit.ID(p.ID)
				done = func() error { return p.Done(permitclient.Success) }
			case "http":
				victimID = acquire()
				done = func() error {
					if r := release(victimID); r != "released" {
						return fmt.Errorf("the victim's release: %s", r)
					}
					return nil
				}
			}

			// The attacker guesses what follows each slot's last ID.
			for _, id := range last {
				for step := range 4 {
					guess := permit.ID((uint64(id)>>32+uint64(step)+1)<<32 | uint64(uint32(id)))
					if r := release(guess); r != "unknown" {
						t.Fatalf("the attacker's guess %v (after %v) was %s", guess, id, r)
					}
				}
			}
			if victim == "permitclient" {
				if r := release(victimID); r != "unknown" {
					t.Fatalf("the attacker's release of the victim's own ID %v: %s, want unknown", victimID, r)
				}
			}
			if n := e.inFlight(t, "jobs"); n != 1 {
				t.Fatalf("in flight %d, want the victim's permit", n)
			}
			if err := done(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMalformedSession: a session that is not 16 hexadecimal digits, or is
// sent twice, is refused (400 over HTTP, INVALID_ARGUMENT over gRPC), and
// no permit is granted for it.
func TestMalformedSession(t *testing.T) {
	e := newEnv(t, jobs(1), permit.Params{})
	s := serve(t, e.svc, "unix")
	hc, base := s.httpClient()
	for _, v := range [][]string{{"zz"}, {"00000000000000001"}, {"0000000000000001", "0000000000000002"}} {
		req, _ := http.NewRequest("POST", base+"/v1/permits", strings.NewReader(`{"group":"jobs"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header[permitpb.SessionHeader] = v
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error, Field string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 400 || body.Field != "session" {
			t.Errorf("%s %q: %d %+v, want 400 naming the session", permitpb.SessionHeader, v, resp.StatusCode, body)
		}
	}
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), permitpb.SessionKey, "zz")
	if _, err := permitpb.NewPermitsClient(conn).Acquire(ctx, &permitpb.AcquireRequest{Group: "jobs"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("metadata %s: zz: %v, want InvalidArgument", permitpb.SessionKey, err)
	}
	if n := e.inFlight(t, "jobs"); n != 0 {
		t.Fatalf("in flight %d", n)
	}
}
