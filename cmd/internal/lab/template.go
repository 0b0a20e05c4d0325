package lab

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

var placeholder = regexp.MustCompile(`\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}`)

// maxNesting bounds how deep placeholders may nest (a var whose value
// uses a var, ...), so that a var that uses itself is an error, not a
// loop.
const maxNesting = 8

// expand replaces every {{name}} in s with vars[name], and again in what
// that brings in, until none is left; a name not in vars is an error that
// lists the known ones, so a typo cannot reach a config.
func expand(s string, vars map[string]string) (string, error) {
	for depth := 0; placeholder.MatchString(s); depth++ {
		if depth == maxNesting {
			return "", fmt.Errorf("lab: placeholders nest more than %d deep (does a var use itself?): %.80q", maxNesting, s)
		}
		var missing []string
		s = placeholder.ReplaceAllStringFunc(s, func(m string) string {
			name := placeholder.FindStringSubmatch(m)[1]
			v, ok := vars[name]
			if !ok {
				missing = append(missing, name)
				return m
			}
			return v
		})
		if len(missing) > 0 {
			return "", &unknownVarError{name: missing[0], known: slices.Sorted(maps.Keys(vars))}
		}
	}
	return s, nil
}

// unknownVarError is a placeholder no var defines.
type unknownVarError struct {
	name  string
	known []string
}

func (e *unknownVarError) Error() string {
	return fmt.Sprintf("lab: unknown placeholder {{%s}} (known: %s)", e.name, strings.Join(e.known, ", "))
}
