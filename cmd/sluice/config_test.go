package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/configs"
)

// TestConfigPrintsTheDefault checks that "sluice config" prints the embedded
// default as a file, comments included, that loads to the config "sluice
// run" runs without -config.
func TestConfigPrintsTheDefault(t *testing.T) {
	code, out, errOut := runArgs("config")
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	if out != string(configs.DefaultFile()) || !strings.HasPrefix(out, "# ") {
		t.Errorf("stdout is not default.toml:\n%s", out)
	}
	c, err := configs.Parse("stdout", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	def, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Clone(), def.Clone()) {
		t.Error("the printed config is not the one run uses without -config")
	}
	if code, out, errOut := runArgs("config", "extra"); code != exitUsage || out != "" || !strings.Contains(errOut, "usage: sluice config\n") {
		t.Errorf("config extra: code %d, stdout %q, stderr %q", code, out, errOut)
	}
}
