package configs

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/sluicehq/sluice/gate/spec"
)

// Gate returns what the gate runs of c: its groups (copies: the file's
// groups are the gate's type, package gate/spec), server.trusted_proxies
// and the control loop's periods.
func (c *Config) Gate() spec.Config {
	s := spec.Config{
		Groups:         make([]spec.Group, len(c.Groups)),
		TrustedProxies: append([]string(nil), c.Server.TrustedProxies...),
		Interval:       time.Duration(c.Control.Interval),
		SaveInterval:   time.Duration(c.Control.SaveInterval),
	}
	for i := range c.Groups {
		s.Groups[i] = c.Groups[i].Clone()
	}
	return s
}

// Hash identifies c by its effective content (Effective): the status
// read-outs' config hash. It is "" if c cannot be encoded.
func (c *Config) Hash() string {
	b, err := c.Effective()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
