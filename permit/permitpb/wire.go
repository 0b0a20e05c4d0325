package permitpb

// The protocol's facts beside its messages, shared by the service (package
// permit) and its client (permitclient).

// MaxStreams is the most streams (calls and Sessions) the permit service
// serves at once on one connection (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS):
// permitclient opens at most this many Sessions on its connection, so that
// none of its calls waits for a stream that an idle Session holds.
const MaxStreams = 1024

// SessionHeader is the HTTP header that carries a caller's session, 16
// hexadecimal digits, and SessionKey the gRPC metadata key that does (a
// Session stream's, for all its calls): a permit granted in a session is
// released only in that session (permit.Session).
const (
	SessionHeader = "Sluice-Session"
	SessionKey    = "sluice-session"
)
