package lab

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/sluicehq/sluice/cmd/internal/lab/scenario"
)

// shipped holds the scenarios that come with sluice-lab.
//
//go:embed scenarios/*.toml
var shipped embed.FS

// contendersFile is the library of contenders the shipped scenarios build
// on (`like = "target"`): `sluice run` with each control law.
//
//go:embed contenders.toml
var contendersFile []byte

// Library returns the shipped library of contenders.
func Library() *scenario.Library {
	lib, err := scenario.ParseLibrary("contenders.toml", contendersFile)
	if err != nil {
		panic(err) // a test parses it; it cannot fail at run time
	}
	return lib
}

// Scenarios lists the names of the shipped scenarios.
func Scenarios() []string {
	entries, _ := fs.ReadDir(shipped, "scenarios")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	sort.Strings(names)
	return names
}

// LoadScenario reads a scenario by the name of a shipped one ("step") or
// by the path of a file ("my/step.toml", anything with a / or .toml). Its
// contenders may be like those of Library.
func LoadScenario(nameOrPath string) (*scenario.Scenario, error) {
	if strings.ContainsRune(nameOrPath, '/') || strings.HasSuffix(nameOrPath, ".toml") {
		src, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		return scenario.ParseWith(nameOrPath, src, Library())
	}
	file := path.Join("scenarios", nameOrPath+".toml")
	src, err := shipped.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lab: no scenario %q (shipped: %s; or give a file path)", nameOrPath, strings.Join(Scenarios(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return scenario.ParseWith(file, src, Library())
}
