package configs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"

	"github.com/BurntSushi/toml"
)

// maxFileSize bounds a config file; a real one is a few kilobytes.
const maxFileSize = 4 << 20

//go:embed default.toml
var defaultFile []byte

// Load reads the TOML file at path and returns its config with every
// default filled in, or every problem found as an [Errors] naming path,
// line and key. A file that cannot be read gives a plain error wrapping the
// os error.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("configs: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("configs: read %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse is Load for a file already in memory; name is used in messages
// ("" for none). Decoding, defaults and validation run in that order and
// every problem of all three is returned together: a syntax error, which
// stops the TOML parser, is the only one reported alone.
func Parse(name string, data []byte) (*Config, error) {
	c, decoded, checked := parse(name, data)
	errs := append(decoded, checked...)
	errs.sort()
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// parse is Parse in parts: the config as decoded (its values that failed to
// decode left at their defaults) with SetDefaults applied, nil if the file
// could not be decoded at all; the problems of decoding; and those that
// validation found.
func parse(name string, data []byte) (c *Config, decoded, checked Errors) {
	if len(data) > maxFileSize {
		return nil, Errors{{File: name, Msg: fmt.Sprintf("file is larger than %d bytes", maxFileSize)}}, nil
	}
	if e := badText(name, data); e != nil {
		return nil, Errors{e}, nil
	}
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		e := &Error{File: name, Msg: "invalid TOML: " + err.Error()}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			e.Line, e.Msg = syntaxLine(data, pe.Position), "invalid TOML: "+pe.Message
		}
		return nil, Errors{e}, nil
	}
	src := &source{file: name, lines: keyLines(string(data), md.Keys()), bad: map[string]bool{}, badBelow: map[string]bool{}}
	ck := &checker{src: src}
	c = New()
	(&decoder{ck: ck}).table("", raw, reflect.ValueOf(c).Elem())
	decoded, ck.errs = ck.errs, nil
	c.SetDefaults()
	c.src = src
	c.check(ck)
	return c, decoded, ck.errs
}

var parsedDefault = sync.OnceValues(func() (*Config, error) {
	return Parse("default.toml", defaultFile)
})

// Default returns the embedded default config, what `sluice run` uses
// without -config: a sidecar on 127.0.0.1:8080 in front of
// http://127.0.0.1:9000, with one catch-all group under law "target" (p99
// under 200ms, CPU under 80%, memory under 85%). Each call returns a new
// copy.
func Default() *Config {
	c, err := parsedDefault()
	if err != nil {
		panic("configs: the embedded default config is invalid: " + err.Error()) // caught by TestDefaultIsValid
	}
	return c.Clone()
}

// DefaultFile returns the TOML text of the embedded default config, with
// its comments, as a starting point for a file of one's own.
func DefaultFile() []byte {
	return append([]byte(nil), defaultFile...)
}

// syntaxLine returns the line of a syntax error. The library counts a
// newline that ends a line as the start of the next one ("[server" then
// newline is reported on line 2); its byte offset is exact, so count lines up
// to it, in the input as the library saw it: without a byte order mark (a
// UTF-8 one: badText has turned away the others).
func syntaxLine(data []byte, pos toml.Position) int {
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	if pos.Start < 0 || pos.Start > len(data) {
		return pos.Line
	}
	return 1 + bytes.Count(data[:pos.Start], []byte("\n"))
}
