package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/configs"
	ilisten "github.com/sluicehq/sluice/internal/listen"
)

// listenAddr is an address the daemon listens on, and the mode a unix
// socket there is made with.
type listenAddr struct {
	key, listen string      // the config key and its value
	mode        fs.FileMode // the socket's mode
}

// listenAddrs lists the addresses cfg listens on.
func listenAddrs(cfg *configs.Config) []listenAddr {
	list := []listenAddr{{"server.listen", cfg.Server.Listen, ilisten.DefaultSocketMode},
		{"admin.listen", cfg.Admin.Listen, ilisten.DefaultSocketMode}}
	if p := cfg.Permit; p != nil {
		list = append(list, listenAddr{"permit.listen", p.Listen, socketMode(p.SocketMode)})
	}
	if r := cfg.RLS; r != nil {
		list = append(list, listenAddr{"rls.listen", r.Listen, socketMode(r.SocketMode)})
	}
	return list
}

// socketMode is a configured socket_mode, DefaultSocketMode for 0.
func socketMode(mode int) fs.FileMode {
	if mode == 0 {
		return ilisten.DefaultSocketMode
	}
	return fs.FileMode(mode)
}

// makeSocketFolders makes the missing folder of each unix socket cfg
// listens on, as daemons do (systemd's RuntimeDirectory= makes /run/NAME
// the same way): writable by sluice's user alone, searchable by those the
// socket's mode lets connect (0o660 gives 0o750). It returns the folders it
// made; its error names the key, the folder and what to do.
func makeSocketFolders(cfg *configs.Config) (made []string, err error) {
	for _, s := range listenAddrs(cfg) {
		path, ok := strings.CutPrefix(s.listen, "unix://")
		if !ok {
			continue
		}
		dir := filepath.Dir(path)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		mode := folderMode(s.mode)
		if err := os.MkdirAll(dir, mode); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return made, fmt.Errorf("%s %s: the socket's folder %s does not exist and cannot be made (%w): "+
				"make it, writable by sluice's user (mkdir -p %s; under systemd, RuntimeDirectory= in the unit), or listen elsewhere",
				s.key, s.listen, dir, err, dir)
		}
		if err := os.Chmod(dir, mode); err != nil { // MkdirAll's mode is under the umask
			return made, fmt.Errorf("%s %s: the socket's folder %s: %w", s.key, s.listen, dir, err)
		}
		made = append(made, dir)
	}
	return made, nil
}

// folderMode is the mode of a folder made for a socket of mode m: rwx for
// the owner, r-x for the group and for others where m gives them anything.
func folderMode(m fs.FileMode) fs.FileMode {
	mode := fs.FileMode(0o700)
	if m&0o070 != 0 {
		mode |= 0o050
	}
	if m&0o007 != 0 {
		mode |= 0o005
	}
	return mode
}

// neededFile is a file a config names that sluice reads at start.
type neededFile struct {
	key, path string
	holds     string // what to write into it, and how
}

// neededFiles lists the files cfg names that must exist at start.
func neededFiles(cfg *configs.Config) []neededFile {
	const token = "a token of at least 16 printable bytes, readable by sluice's user alone (openssl rand -hex 32 > FILE; chmod 600 FILE)"
	var list []neededFile
	add := func(key, path, holds string) {
		if path != "" {
			list = append(list, neededFile{key, path, strings.ReplaceAll(holds, "FILE", path)})
		}
	}
	add("server.tls_cert", cfg.Server.TLSCert, "the listener's certificate chain, PEM")
	add("server.tls_key", cfg.Server.TLSKey, "the listener's private key, PEM, readable by sluice's user alone")
	add("upstream.ca_file", cfg.Upstream.CAFile, "the CA certificates that sign the upstream's, PEM")
	add("admin.token_file", cfg.Admin.TokenFile, token)
	if p := cfg.Permit; p != nil {
		add("permit.token_file", p.TokenFile, token)
	}
	if r := cfg.RLS; r != nil {
		add("rls.token_file", r.TokenFile, token)
	}
	if r := cfg.Redis; r != nil {
		add("redis.password_file", r.PasswordFile, "Redis's password (its requirepass), one line, readable by sluice's user alone")
		add("redis.sentinel_password_file", r.SentinelPasswordFile, "the sentinels' password, one line, readable by sluice's user alone")
		add("redis.ca_file", r.CAFile, "the CA certificate that signs Redis's TLS certificate, PEM")
	}
	return list
}

// checkNeededFiles reports the first file cfg names that does not exist,
// with its key and what to write into it: the readers' own errors say only
// that it is missing.
func checkNeededFiles(cfg *configs.Config) error {
	for _, f := range neededFiles(cfg) {
		if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s %s does not exist: write into it %s", f.key, f.path, f.holds)
		}
	}
	return nil
}
