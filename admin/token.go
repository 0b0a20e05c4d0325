package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// MinTokenLen is the shortest token ReadTokenFile accepts, in bytes.
const MinTokenLen = 16

// ReadTokenFile reads the bearer token from path (admin.token_file, and
// the front-ends' permit.token_file and rls.token_file): the file's content
// without surrounding white space, at least MinTokenLen bytes and printable
// ASCII, so that it fits an Authorization header as written. A file that
// every user may read, or that users other than its owner may change, is
// refused (as ssh refuses such a key): any local user could read the token,
// or put their own in its place. Its group may read it (0640), so that a
// group of clients can share it.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("admin: token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat() // the file opened: not one put in its place since
	if err != nil {
		return "", fmt.Errorf("admin: token file: %w", err)
	}
	if m := fi.Mode().Perm(); m&0o026 != 0 {
		return "", fmt.Errorf("admin: token file %s: mode %04o lets other users read or change the token: chmod 600 %s "+
			"(640 to share it with a group); in Kubernetes, the secret volume's defaultMode: 0400 (or 0440)", path, m, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("admin: token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < MinTokenLen {
		return "", fmt.Errorf("admin: token file %s: the token is %d bytes, want at least %d (try: openssl rand -hex 32 > %s)",
			path, len(tok), MinTokenLen, path)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c > '~' {
			return "", fmt.Errorf("admin: token file %s: byte %d of the token is not printable ASCII", path, i)
		}
	}
	return tok, nil
}

// tokenDigest is the SHA-256 of a token. Tokens are compared as digests,
// in constant time, so neither their content nor their length leaks
// through timing.
type tokenDigest struct {
	sum [sha256.Size]byte
	set bool
}

func digest(tok string) tokenDigest { return tokenDigest{sha256.Sum256([]byte(tok)), true} }

// matches reports whether r carries "Authorization: Bearer TOKEN" with the
// token d is the digest of.
func (d tokenDigest) matches(r *http.Request) bool {
	if !d.set {
		return false
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], d.sum[:]) == 1
}
