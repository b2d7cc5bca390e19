// Command mutants reads gremlins' results (scripts/mutation) and holds
// them to docs/RELIABILITY.md: it says each run's score, and fails when a
// mutant lived that the document's table of surviving mutants does not
// list (each row argues why that mutant is equivalent, or what no test
// can tell). A mutant is named by its file, its kind and the text of its
// line, so the table survives lines moving.
//
//	go run ./internal/tooling/mutants DIR=RESULTS.json...
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// results is what gremlins writes (-o).
type results struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
	Efficacy float64 `json:"test_efficacy"`
	Coverage float64 `json:"mutations_coverage"`
	Killed   int     `json:"mutants_killed"`
	Lived    int     `json:"mutants_lived"`
	Total    int     `json:"mutants_total"`
}

// listed is a surviving mutant the document argues for.
type listed struct{ file, kind, code string }

const doc = "docs/RELIABILITY.md"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mutants DIR=RESULTS.json...")
		os.Exit(2)
	}
	table, err := readTable(doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(2)
	}
	seen := map[listed]bool{}
	unlisted := 0
	for _, arg := range os.Args[1:] {
		dir, path, ok := strings.Cut(arg, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "mutants: want DIR=RESULTS.json, not", arg)
			os.Exit(2)
		}
		var r results
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "mutants: %s: %v\n", path, err)
			os.Exit(2)
		}
		fmt.Printf("%s: %d mutants, %d killed, %d lived; efficacy %.1f%%, mutants covered %.1f%%\n",
			dir, r.Total, r.Killed, r.Lived, r.Efficacy, r.Coverage)
		for _, f := range r.Files {
			file := filepath.ToSlash(filepath.Join(dir, f.Name))
			for _, m := range f.Mutations {
				if m.Status != "LIVED" {
					continue
				}
				code := lineOf(file, m.Line)
				key := listed{file, m.Type, code}
				if table[key] {
					seen[key] = true
					continue
				}
				unlisted++
				fmt.Printf("  LIVED %s:%d:%d %s  `%s`: not in %s's table of surviving mutants (kill it with a test, or argue it there)\n",
					file, m.Line, m.Column, m.Type, code, doc)
			}
		}
	}
	for k := range table {
		if !seen[k] {
			fmt.Printf("  listed in %s, and not surviving this run: %s %s `%s` (drop the row if it is killed now)\n", doc, k.file, k.kind, k.code)
		}
	}
	if unlisted > 0 {
		fmt.Printf("mutants: %d surviving mutants not argued in %s\n", unlisted, doc)
		os.Exit(1)
	}
}

// lineOf is line n of file, trimmed.
func lineOf(file string, n int) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for i := 1; s.Scan(); i++ {
		if i == n {
			return strings.TrimSpace(s.Text())
		}
	}
	return ""
}

// readTable reads the rows of the document's table of surviving mutants:
// | file | kind | `code` | why |, under a heading that names them.
func readTable(path string) (map[listed]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[listed]bool{}
	in := false
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			in = strings.Contains(strings.ToLower(line), "surviving mutants")
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := cellsOf(line)
		if len(cells) < 4 {
			continue
		}
		file, kind := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
		code := strings.Trim(strings.TrimSpace(cells[2]), "`")
		if file == "file" || strings.HasPrefix(file, "-") {
			continue
		}
		out[listed{file, kind, code}] = true
	}
	return out, nil
}

// cellsOf splits a table row into its cells; a | in a cell is written \|.
func cellsOf(row string) []string {
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var cells []string
	var b strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			b.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, b.String())
			b.Reset()
		default:
			b.WriteByte(row[i])
		}
	}
	return append(cells, b.String())
}
