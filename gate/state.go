package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// stateVersion is the version of the state file's format this gate writes
// and reads.
const stateVersion = 1

// maxStateSize bounds the state file read: 1000 groups fit in a few dozen KiB.
const maxStateSize = 4 << 20

// stateFile is the state file's content:
//
//	{"version":1,"saved_at":"2025-01-01T00:00:00Z",
//	 "groups":{"api":{"law":"target","limit":42,"rate":0}}}
//
// limit is the learned concurrency limit; rate the managed token rate in
// requests per second (0: none).
type stateFile struct {
	Version int                   `json:"version"`
	SavedAt time.Time             `json:"saved_at"`
	Groups  map[string]groupState `json:"groups"`
}

type groupState struct {
	Law   string  `json:"law,omitempty"`
	Limit int     `json:"limit"`
	Rate  float64 `json:"rate"`
}

// RestoreInfo reports what New found in the state file.
type RestoreInfo struct {
	// Path is the state file, "" when there is none.
	Path string
	// SavedAt is when the file was written; zero when nothing was restored.
	SavedAt time.Time
	// Groups is how many groups were found in it.
	Groups int
	// Err is why the file could not be used (the groups then started from
	// their configured initial limits); nil when it was used or did not
	// exist yet.
	Err error
}

// checkStateFolder reports whether the state file at path can be written,
// by creating and removing a file beside it: a folder that is missing or
// read-only is found at startup, not at the first save or at shutdown.
// Its error names the file, its folder and what to do, not the probe.
func checkStateFolder(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // without the probe's name
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("gate: state file %s: its folder %s does not exist: create it, writable by this process (mkdir -p %s), or keep the state file in a folder that exists", path, dir, dir)
		}
		return fmt.Errorf("gate: state file %s: its folder %s is not writable by this process (%w): make it so, or keep the state file in another folder", path, dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// readState reads the state file at path. A missing file is no error; one
// saved more than maxAge before now (maxAge > 0) is not restored, and
// RestoreInfo says why.
func readState(path string, now time.Time, maxAge time.Duration) (*stateFile, RestoreInfo) {
	info := RestoreInfo{Path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, info
	}
	if err != nil {
		info.Err = fmt.Errorf("gate: state file: %w", err)
		return nil, info
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateSize+1))
	if err != nil {
		info.Err = fmt.Errorf("gate: state file %s: %w", path, err)
		return nil, info
	}
	st, err := parseState(b)
	if err != nil {
		info.Err = fmt.Errorf("gate: state file %s: %w", path, err)
		return nil, info
	}
	if age := now.Sub(st.SavedAt); maxAge > 0 && age > maxAge {
		info.Err = fmt.Errorf("gate: state file %s: saved at %s, %s ago, older than the maximum age %s: not restored",
			path, st.SavedAt.UTC().Format(time.RFC3339), age.Round(time.Second), maxAge)
		return nil, info
	}
	info.SavedAt, info.Groups = st.SavedAt, len(st.Groups)
	return st, info
}

// parseState decodes and checks a state file's content.
func parseState(b []byte) (*stateFile, error) {
	if len(b) > maxStateSize {
		return nil, fmt.Errorf("larger than %d bytes", maxStateSize)
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("not a sluice state file: %w", err)
	}
	if head.Version == nil {
		return nil, errors.New("not a sluice state file: no version")
	}
	if *head.Version != stateVersion {
		return nil, fmt.Errorf("version %d is not supported (this sluice reads version %d)", *head.Version, stateVersion)
	}
	var st stateFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	var bad []error
	for name, gs := range st.Groups {
		if gs.Limit < 1 {
			bad = append(bad, fmt.Errorf("group %q: limit must be at least 1, got %d", name, gs.Limit))
		}
		if gs.Rate < 0 || math.IsNaN(gs.Rate) || math.IsInf(gs.Rate, 0) {
			bad = append(bad, fmt.Errorf("group %q: rate must be a positive number or 0, got %v", name, gs.Rate))
		}
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	return &st, nil
}

// RestoreInfo reports what New found in the state file.
func (g *Gate) RestoreInfo() RestoreInfo { return g.restore }

// SaveState writes every group's learned limit and rate to the state file
// now. It is a no-op without a state file. Run calls it on shutdown and Tick
// every Config.SaveInterval.
func (g *Gate) SaveState() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.statePath == "" {
		return nil
	}
	return g.save(g.now())
}

// save writes the state file; call with g.mu held.
func (g *Gate) save(now time.Time) error {
	g.lastSave = now
	t := g.table.Load()
	st := stateFile{Version: stateVersion, SavedAt: now.UTC(), Groups: make(map[string]groupState, len(t.routes))}
	for _, r := range t.routes {
		c := r.g.cfg.Load()
		st.Groups[r.g.name] = groupState{Law: string(c.Concurrency.Law), Limit: r.g.conc.Limit(), Rate: lawRate(r.g.pol.law)}
	}
	b, err := json.MarshalIndent(&st, "", "  ")
	if err == nil {
		err = writeAtomic(g.statePath, append(b, '\n'))
	}
	if err != nil {
		err = fmt.Errorf("gate: saving state: %w", err)
	}
	g.saved.Store(&saveStatus{at: now, err: err})
	if g.onSave != nil {
		g.onSave(g.statePath, err)
	}
	return err
}

// writeAtomic replaces the file at path with data so that a reader, or a
// crash at any moment, sees either the old content or the new, never a part:
// a temporary file in the same directory, written, synced, closed, renamed
// over path, and the directory synced so the rename itself is durable.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil && !errors.Is(err, os.ErrInvalid) {
			return err
		}
	}
	return nil
}

// saveStatus is the last save's outcome.
type saveStatus struct {
	at  time.Time
	err error
}
