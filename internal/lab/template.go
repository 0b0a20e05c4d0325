package lab

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

var placeholder = regexp.MustCompile(`\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}`)

// expand replaces every {{name}} in s with vars[name]; a name not in vars
// is an error that lists the known ones, so a typo cannot reach a config.
func expand(s string, vars map[string]string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("lab: unknown placeholder {{%s}} (known: %s)", missing[0], strings.Join(slices.Sorted(maps.Keys(vars)), ", "))
	}
	return out, nil
}
