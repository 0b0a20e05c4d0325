package listen

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Token is a bearer token, held as its SHA-256 digest. Tokens are compared
// as digests, in constant time, so neither their content nor their length
// leaks through timing. The zero Token matches nothing.
type Token struct {
	sum [sha256.Size]byte
	set bool
}

// NewToken returns the Token of tok; an empty tok gives the zero Token.
func NewToken(tok string) Token {
	if tok == "" {
		return Token{}
	}
	return Token{sha256.Sum256([]byte(tok)), true}
}

// Set reports whether t holds a token.
func (t Token) Set() bool { return t.set }

// Matches reports whether authorization, the value of an Authorization
// header (or of gRPC's "authorization" metadata), is "Bearer TOKEN" with the
// token t holds. The scheme is case-insensitive.
func (t Token) Matches(authorization string) bool {
	if !t.set {
		return false
	}
	scheme, tok, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], t.sum[:]) == 1
}

// ErrUnauthenticated is the status of a gRPC call without the right token.
var ErrUnauthenticated = status.Error(codes.Unauthenticated, "missing or wrong bearer token (metadata \"authorization: Bearer TOKEN\")")
