package rawreq

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRepositoryFixtures(t *testing.T) {
	cases, err := Load("../../testdata/requests")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Why == "" || !strings.HasPrefix(string(c.Bytes), "POST /smuggled HTTP/1.") {
			t.Errorf("%s: why %q, bytes %q", c.Name, c.Why, c.Bytes)
		}
	}
	if cases[0].Name != "cl-and-te" || !strings.Contains(string(cases[0].Bytes), "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") {
		t.Errorf("first fixture %s: %q", cases[0].Name, cases[0].Bytes)
	}
}

func TestLoadRefusesMalformed(t *testing.T) {
	for name, text := range map[string]string{
		"unquoted":  "status: 400\n\nGET / HTTP/1.1\n",
		"nostatus":  "why: x\n\n\"GET / HTTP/1.1\\r\\n\\r\\n\"\n",
		"badstatus": "status: 9000\n\n\"x\"\n",
		"unknown":   "code: 400\n\n\"x\"\n",
		"nobytes":   "status: 400\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), name+".txt") {
			t.Errorf("%s: err %v, want one naming the file", name, err)
		}
	}
}

func TestProblems(t *testing.T) {
	c := Case{Name: "x", Status: 400, Why: "bad framing"}
	ok := Exchange{FirstStatus: 200, FirstBody: "ok /first", Status: 400, Closed: true}
	if ps := ok.Problems(c); len(ps) != 0 {
		t.Errorf("an exchange as asked: %q", ps)
	}
	for _, bad := range []Exchange{
		{FirstStatus: 502, FirstBody: "ok /first", Status: 400, Closed: true},
		{FirstStatus: 200, FirstBody: "ok /first", Status: 200, Closed: true},
		{FirstStatus: 200, FirstBody: "ok /first", Status: 400},
	} {
		if ps := bad.Problems(c); len(ps) != 1 {
			t.Errorf("%+v: %q, want one problem", bad, ps)
		}
	}
}
