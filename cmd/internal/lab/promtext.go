package lab

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// selector picks one series out of a Prometheus text exposition: a metric
// name and labels that must match (others may be present), written as in
// PromQL: sluice_concurrency_limit{group="api"}.
type selector struct {
	name   string
	labels map[string]string
}

func parseSelector(s string) (selector, error) {
	name, labels, rest, err := parseSeries(strings.TrimSpace(s))
	if err != nil {
		return selector{}, fmt.Errorf("lab: metric selector %q: %w", s, err)
	}
	if strings.TrimSpace(rest) != "" {
		return selector{}, fmt.Errorf("lab: metric selector %q: unexpected %q", s, rest)
	}
	return selector{name: name, labels: labels}, nil
}

// find returns the value of the first series in text that sel matches.
// Lines it cannot read are skipped: an exporter's quirks must not stop a
// run.
func (sel selector) find(text string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, sel.name) {
			continue
		}
		name, labels, rest, err := parseSeries(line)
		if err != nil || name != sel.name || !contains(labels, sel.labels) {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		return v, true
	}
	return 0, false
}

func contains(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// parseSeries reads `name{k="v",...}` from the start of s (the exposition
// format's series, with \\, \" and \n escapes in values) and returns what
// follows.
func parseSeries(s string) (name string, labels map[string]string, rest string, err error) {
	i := 0
	for i < len(s) && isNameByte(s[i], i == 0) {
		i++
	}
	if i == 0 {
		return "", nil, "", errors.New("no metric name")
	}
	name, s = s[:i], s[i:]
	labels = map[string]string{}
	if !strings.HasPrefix(s, "{") {
		return name, labels, s, nil
	}
	s = s[1:]
	for {
		s = strings.TrimLeft(s, " ")
		if strings.HasPrefix(s, "}") {
			return name, labels, s[1:], nil
		}
		j := 0
		for j < len(s) && isNameByte(s[j], j == 0) && s[j] != ':' {
			j++
		}
		if j == 0 || j >= len(s) || s[j] != '=' {
			return "", nil, "", errors.New("bad label name")
		}
		key := s[:j]
		s = s[j+1:]
		if !strings.HasPrefix(s, `"`) {
			return "", nil, "", fmt.Errorf("label %s: value must be quoted", key)
		}
		var val strings.Builder
		k := 1
		for ; k < len(s) && s[k] != '"'; k++ {
			if s[k] == '\\' && k+1 < len(s) {
				k++
				switch s[k] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[k])
				}
				continue
			}
			val.WriteByte(s[k])
		}
		if k >= len(s) {
			return "", nil, "", fmt.Errorf("label %s: unterminated value", key)
		}
		labels[key] = val.String()
		s = strings.TrimLeft(s[k+1:], " ")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if !strings.HasPrefix(s, "}") {
			return "", nil, "", errors.New("expected , or }")
		}
	}
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}
