package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/viper"

	"github.com/agentforeman/foreman/internal/checkspec"
)

// labelRE is what a label may be (worker.labels, a check's labels): a
// word that names a kind of machine, lower case.
var labelRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// SandboxedLabel is the label every worker that confines its checks has
// without saying so, and every job of a host that confines its checks asks
// for: a worker with host.sandbox off never gets such a job.
const SandboxedLabel = "sandboxed"

// decodeChecks reads host.checks: each entry a check as written ("make
// test"), or a mapping {run: "make gpu-test", labels: [gpu]} for a check
// that only a worker with those labels may run.
func decodeChecks(v *viper.Viper, h *Host) error {
	var list []any
	switch raw := v.Get("host.checks").(type) {
	case []any:
		list = raw
	case nil:
	default:
		// A variable (FOREMAN_HOST_CHECKS) or a flag: a list of words, as
		// every list key reads it.
		for _, s := range v.GetStringSlice("host.checks") {
			list = append(list, s)
		}
	}
	for i, item := range list {
		key := fmt.Sprintf("host.checks[%d]", i)
		var line string
		var labels []string
		switch t := item.(type) {
		case string:
			line = t
		case map[string]any:
			for k, val := range t {
				switch k {
				case "run":
					s, ok := val.(string)
					if !ok {
						return errorf(key+".run", "is not a check like \"make test\"")
					}
					line = s
				case "labels":
					ls, err := labelList(val)
					if err != nil {
						return errorf(key+".labels", "%v", err)
					}
					labels = ls
				default:
					return errorf(key+"."+k, "unknown key (a check is written as a string, or as run and labels)")
				}
			}
			if _, ok := t["run"]; !ok {
				return errorf(key, "has no run: the check, like \"make test\"")
			}
		default:
			return errorf(key, "is not a check like \"make test\", nor a mapping with run and labels")
		}
		argv, err := checkspec.Split(line)
		if err != nil {
			return errorf(key, "%v", err)
		}
		if op := checkspec.ShellOperator(line); op != "" {
			return errorf(key, "%q has %s outside quotes, and checks run with no shell to read it; write sh -c '%s'",
				line, op, strings.ReplaceAll(line, "'", `'\''`))
		}
		h.Checks = append(h.Checks, argv)
		h.CheckLines = append(h.CheckLines, line)
		h.CheckLabels = append(h.CheckLabels, labels)
	}
	return nil
}

// labelList reads a list of labels (or one, or several separated by
// spaces), sorted, each once.
func labelList(val any) ([]string, error) {
	var words []string
	switch t := val.(type) {
	case nil:
	case string:
		words = strings.Fields(t)
	case []any:
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%v is not a label", x)
			}
			words = append(words, s)
		}
	case []string:
		words = t
	default:
		return nil, fmt.Errorf("is not a list of labels")
	}
	var out []string
	for _, w := range words {
		w = strings.TrimSpace(w)
		if !labelRE.MatchString(w) {
			return nil, fmt.Errorf("%q is not a label: 1 to 32 lower-case letters, digits, _ or -", w)
		}
		if w == SandboxedLabel {
			return nil, fmt.Errorf("%q is foreman's own label (a worker that confines its checks has it; a host that confines its checks asks for it): choose another", w)
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out, nil
}
