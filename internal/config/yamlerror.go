package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// yamlError reports a config file that viper could not read. Viper's YAML
// library gives the line where the enclosing block starts, counted from
// zero, rather than the line at fault (a bad indent on line 5 of a list
// comes out as "line 2"), so the file is parsed again with a parser that
// keeps each token's position, and its line and column are given the way
// compilers give them, which editors jump to. Viper's own message is kept
// when that parser finds nothing wrong.
func yamlError(file string, err error) error {
	if data, rerr := os.ReadFile(file); rerr == nil {
		if _, perr := parser.ParseBytes(data, 0); perr != nil {
			var ye goyaml.Error
			if errors.As(perr, &ye) && ye.GetToken() != nil {
				pos := ye.GetToken().Position
				return fmt.Errorf("%s:%d:%d: not valid YAML: %s", file, pos.Line, pos.Column, oneLine(strings.ReplaceAll(ye.GetMessage(), "\t", `\t`)))
			}
		}
	}
	msg := strings.TrimPrefix(oneLine(err.Error()), "While parsing config: ")
	return fmt.Errorf("%s: not valid YAML: %s", file, strings.TrimPrefix(msg, "yaml: "))
}

// oneLine joins a message that spans lines: every error is one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
