package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/sluicehq/sluice/configs"
)

// TestLoggerMultiLineConfigError logs a config with three problems as a
// refused reload does (logReload, the error wrapped by loadNext): each
// problem on a line of its own, none with a tab quoted as a literal "\t".
func TestLoggerMultiLineConfigError(t *testing.T) {
	_, perr := configs.Parse("bad.toml", []byte("[server]\nlisten = 1\n[admin]\nlisten = 2\n"))
	if perr == nil {
		t.Fatal("a config with two wrong types parsed")
	}
	err := fmt.Errorf("sluice: reload %s: %w", "bad.toml", perr)
	var b bytes.Buffer
	newLogger(hclog.Info, false, &b).Error("reload refused: the running config keeps serving", "error", err)
	out := b.String()
	if strings.Contains(out, `\t`) || strings.Count(out, "bad.toml:") < 2 || strings.Count(out, "\n") < 3 {
		t.Errorf("log:\n%s", out)
	}
}
