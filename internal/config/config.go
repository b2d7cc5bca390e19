// Package config loads foreman's configuration: a YAML file, FOREMAN_*
// environment variables and command-line flags, in rising order of
// precedence. Every error is one line that names the key at fault.
package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/coordinator/graph"
	"github.com/agentforeman/foreman/coordinator/suggest"
	"github.com/agentforeman/foreman/protocol"
)

// Config is foreman's whole configuration.
type Config struct {
	Server  Server
	Build   Build
	Roles   coordinator.Roles
	Rules   coordinator.Rules
	Budgets coordinator.Budgets // budgets.component, .agent: the defaults; .components, .agents: by name and id; .build; BUDGET lines override them
	Journal string              // path of the journal; "" keeps no journal
	Record  string              // path of the transcript to record; "" records none
	HTTP    string              // listen address of the board, metrics and health
	// HTTPNames are more names the board is reached by (http.names): an
	// operator signs in to decide on the board only at one of its own.
	HTTPNames []string
	Log       Log
	MCP       MCP
	// Telemetry is where agents' spend comes in (docs/BUDGETS.md).
	Telemetry Telemetry
	Cluster   Cluster // NATS JetStream and leases; off by default
	Host      Host    // foreman host: the git repository it checks and lands in
	Worker    Worker  // foreman worker: runs the hosts' checks (with cluster.nats)
	Agents    []Agent // the agents foreman up starts and supervises
	File      string  // the file read, "" if none
	// Warnings are problems that do not stop foreman, for the log.
	Warnings []string

	origins map[string]string // where each key's value came from; see Origin
	set     map[string]bool   // keys given a value by a flag, a variable or the file
}

// Origin says where key's value came from, in the words the user would
// fix it with: a flag ("--url"), a variable ("FOREMAN_SERVER_URL"), the
// file ("server.url in foreman.yaml"), or the default ("server.url's
// default"). An error about a value that came from elsewhere than the
// user thinks is solved in one step when it names the place.
func (c *Config) Origin(key string) string {
	if o, ok := c.origins[key]; ok {
		return o
	}
	return key
}

// Server says where the room is and who foreman is there.
type Server struct {
	URL        string
	Channel    string
	Identity   string        // path of the identity file (AgentChat identity.json)
	Name       string        // display name
	RateLimit  time.Duration // the room allows one message per RateLimit; 0: no limit
	MaxMessage int           // bytes of content per message
	FloodLimit int           // frames the room accepts per 10s before it disconnects; -1: no limit
	History    int           // frames of history the room replays on join (a stock server: 20)
}

// Build is what is built.
type Build struct {
	Name       string
	Components []coordinator.Component
	Spec       string   // owl spec directory the components came from, if any
	Owl        *OwlSpec // how the spec was read, for validate to show; nil without one
	Warnings   []string // what will not work as meant (Redacted, a spec's cut cycles), for validate and run to say
}

// MCP is how foreman mcp, the MCP server an LLM agent's client starts,
// speaks for its agent.
type MCP struct {
	// Keepalive: automatic check-ins for an agent that works without
	// calling a tool stop this long after its last tool call, so that a
	// dead agent still times out; 0: no automatic check-ins.
	Keepalive time.Duration
}

// Telemetry configures the OTLP receiver of agents' spend.
type Telemetry struct {
	// Secret is the path of the file whose bytes make each agent's
	// token (internal/otlp.Token); created when missing. "": no receiver.
	Secret string
}

// Log says how foreman logs.
type Log struct {
	Level  string // trace, debug, info, warn, error
	Format string // auto (console on a terminal, else JSON), console or json
}

// MaxMessage is the most content one message may carry: a stock server
// closes a connection that sends a frame over 2 MiB, and the frame holds the
// content (escaped; the client counts escapes) and a small envelope.
const MaxMessage = 2<<20 - 4096

// Error is a configuration error: the key at fault and what is wrong.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return e.Key + ": " + e.Msg }

func errorf(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// defaults are every key foreman knows, with its default. A key that is not
// here is unknown.
func defaults() map[string]any {
	d := map[string]any{
		"server.url":         "ws://127.0.0.1:6667",
		"server.channel":     "#build",
		"server.identity":    ".foreman/identity.json",
		"server.name":        "foreman",
		"server.rate_limit":  "1s",
		"server.max_message": 1 << 20,
		"server.flood_limit": 60,
		"server.history":     20,
		"build.name":         "build",
		"build.components":   []any{},
		"build.spec":         "",
		"roles.operators":    []string{},
		"roles.auditors":     []string{},
		"roles.ci":           []string{},
		"roles.merger":       []string{},
		"journal.path":       ".foreman/journal",
		"record.path":        "",
		"http.listen":        "127.0.0.1:9090",
		"http.names":         []string{},
		"log.level":          "info",
		"log.format":         "auto",
		"mcp.keepalive":      "30m",
		"budgets.component":  "",
		"budgets.agent":      "",
		"budgets.components": []any{},
		"budgets.agents":     []any{},
		"budgets.build":      "",
		"telemetry.secret":   "",
	}
	clusterDefaults(d)
	hostDefaults(d)
	workerDefaults(d)
	agentsDefaults(d)
	r := coordinator.DefaultRules()
	for _, k := range coordinator.RuleKeys() {
		d["rules."+k], _ = r.Get(k)
	}
	return d
}

// Keys lists every configuration key, sorted.
func Keys() []string {
	var keys []string
	for k := range defaults() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Load reads the configuration. file may be "" (defaults, environment and
// flags only). flags, if not nil, are bound by their names: a flag named
// "server.url", or one listed in flagKeys, overrides that key when set.
func Load(file string, flags *pflag.FlagSet, flagKeys map[string]string) (*Config, error) {
	v := viper.New()
	for k, val := range defaults() {
		v.SetDefault(k, val)
	}
	v.SetEnvPrefix("FOREMAN")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	warnings := unknownEnv()
	if flags != nil {
		for name, key := range flagKeys {
			if f := flags.Lookup(name); f != nil {
				if err := v.BindPFlag(key, f); err != nil {
					return nil, errorf(key, "%v", err)
				}
			}
		}
	}
	if file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, fileError(file, err)
		}
		if err := checkKeys(v); err != nil {
			return nil, err
		}
	}
	src := sources{file: file, flags: flags, flagKeys: flagKeys}
	c, err := decode(v, src)
	if err != nil {
		return nil, src.rename(err)
	}
	c.Warnings = warnings
	c.origins, c.set = map[string]string{}, map[string]bool{}
	for key := range defaults() {
		inFile := file != "" && v.InConfig(key)
		c.origins[key] = src.origin(key, inFile)
		c.set[key] = inFile || src.fromFlag(key) || src.fromEnv(key)
	}
	return c, nil
}

func fileError(file string, err error) error {
	var notFound viper.ConfigFileNotFoundError
	if errors.As(err, &notFound) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: no such config file", file)
	}
	return yamlError(file, err)
}

// checkKeys refuses keys foreman does not know, suggesting the closest.
func checkKeys(v *viper.Viper) error {
	known := defaults()
	for _, k := range v.AllKeys() {
		if _, ok := known[k]; ok {
			continue
		}
		if strings.HasPrefix(k, "build.components.") || strings.HasPrefix(k, "budgets.components.") || strings.HasPrefix(k, "budgets.agents.") {
			continue // viper flattens nothing inside lists; guard anyway
		}
		if s := suggest.Closest(k, Keys()); s != "" {
			return errorf(k, "unknown key (did you mean %s?)", s)
		}
		return errorf(k, "unknown key")
	}
	return nil
}

// unknownEnv lists FOREMAN_* variables that name no key: a typo there
// would otherwise go unnoticed. They are warnings, not errors, because
// another tool may use the same prefix.
func unknownEnv() []string {
	known := map[string]bool{"FOREMAN_CONFIG": true, EnvIdentity: true, EnvNATSUser: true, EnvNATSPassword: true, EnvNATSToken: true}
	for _, k := range Keys() {
		known[EnvVar(k)] = true
	}
	known[EnvPushURL], known[EnvPushToken] = true, true
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "FOREMAN_") && !known[name] {
			out = append(out, name+": unknown environment setting, ignored (keys map to FOREMAN_SECTION_KEY, e.g. FOREMAN_SERVER_URL)")
		}
	}
	sort.Strings(out)
	return out
}

var (
	channelRE = regexp.MustCompile(`^#[A-Za-z0-9_-]{1,31}$`)
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
)

func decode(v *viper.Viper, src sources) (*Config, error) {
	file := src.file
	c := &Config{
		Server: Server{
			URL:      strings.TrimSpace(v.GetString("server.url")),
			Channel:  v.GetString("server.channel"),
			Identity: src.path("server.identity", v.GetString("server.identity")),
			Name:     v.GetString("server.name"),
		},
		Build:     Build{Name: v.GetString("build.name"), Spec: v.GetString("build.spec")},
		Journal:   src.path("journal.path", v.GetString("journal.path")),
		Record:    src.path("record.path", v.GetString("record.path")),
		HTTP:      v.GetString("http.listen"),
		HTTPNames: v.GetStringSlice("http.names"),
		Log:       Log{Level: strings.ToLower(v.GetString("log.level")), Format: strings.ToLower(v.GetString("log.format"))},
		Rules:     coordinator.DefaultRules(),
		File:      file,
	}
	if !strings.HasPrefix(c.Server.URL, "ws://") && !strings.HasPrefix(c.Server.URL, "wss://") {
		return nil, errorf("server.url", "%q is not a ws:// or wss:// URL", c.Server.URL)
	}
	if !channelRE.MatchString(c.Server.Channel) {
		return nil, errorf("server.channel", "%q is not a channel name: # and 1 to 31 letters, digits, _ or -", c.Server.Channel)
	}
	if !nameRE.MatchString(c.Server.Name) {
		return nil, errorf("server.name", "%q is not a display name: 1 to 32 letters, digits, _ or -", c.Server.Name)
	}
	for _, n := range c.HTTPNames {
		if n == "" || strings.ContainsAny(n, "/ \t@?#") {
			return nil, errorf("http.names", "%q is not a host or host:port: give the board's name as a browser's address has it, without http:// (board.example, board.example:8443)", n)
		}
	}
	var err error
	if c.Server.RateLimit, err = duration(v, "server.rate_limit", false); err != nil {
		return nil, err
	}
	if c.Server.FloodLimit, err = count(v, "server.flood_limit", -1); err != nil {
		return nil, err
	}
	if c.Server.MaxMessage, err = count(v, "server.max_message", 256); err != nil {
		return nil, err
	}
	if c.Server.MaxMessage > MaxMessage {
		return nil, errorf("server.max_message", "%d is more than a room takes in one message: a stock server closes the connection on a frame over 2 MiB, so at most %d", c.Server.MaxMessage, MaxMessage)
	}
	if c.Server.History, err = count(v, "server.history", 0); err != nil {
		return nil, err
	}
	if c.MCP.Keepalive, err = duration(v, "mcp.keepalive", false); err != nil {
		return nil, err
	}
	c.Telemetry.Secret = src.path("telemetry.secret", v.GetString("telemetry.secret"))
	for key, dst := range map[string]*coordinator.Limit{"budgets.component": &c.Budgets.Component,
		"budgets.agent": &c.Budgets.Agent, "budgets.build": &c.Budgets.Build} {
		if *dst, err = coordinator.ParseLimit(v.GetString(key)); err != nil {
			return nil, errorf(key, "%v", err)
		}
	}
	if err := atMost(c.Server.RateLimit, time.Minute, "server.rate_limit"); err != nil {
		return nil, err
	}
	for key, n := range map[string]int{"server.flood_limit": c.Server.FloodLimit, "server.history": c.Server.History} {
		if err := atMost(n, 1_000_000, key); err != nil {
			return nil, err
		}
	}
	if c.Build.Name == "" || protocol.CleanWord(c.Build.Name, protocol.MaxName) != c.Build.Name {
		return nil, errorf("build.name", "%q is not one word", c.Build.Name)
	}
	for _, k := range coordinator.RuleKeys() {
		if err := c.Rules.Set(k, v.GetString("rules."+k)); err != nil {
			return nil, errorf("rules."+k, "%s", strings.TrimPrefix(err.Error(), k+": "))
		}
	}
	if err := c.Rules.Check(); err != nil {
		// "key: why": named as the key, or the variable that set it.
		if k, msg, ok := strings.Cut(err.Error(), ": "); ok && slices.Contains(coordinator.RuleKeys(), k) {
			return nil, errorf("rules."+k, "%s", msg)
		}
		return nil, fmt.Errorf("rules.%w", err)
	}
	roles := []struct {
		key string
		dst *[]string
	}{
		{"roles.operators", &c.Roles.Operators},
		{"roles.auditors", &c.Roles.Auditors},
		{"roles.ci", &c.Roles.CI},
		{"roles.merger", &c.Roles.Merger},
	}
	for _, r := range roles {
		ids := v.GetStringSlice(r.key)
		for _, id := range ids {
			if !protocol.ValidAgent(id) {
				return nil, errorf(r.key, "%q is not a sender id like @0123456789abcdef", id)
			}
		}
		*r.dst = ids
	}
	switch c.Log.Level {
	case "trace", "debug", "info", "warn", "error":
	default:
		return nil, errorf("log.level", "%q is not trace, debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "auto", "console", "json":
	default:
		return nil, errorf("log.format", "%q is not auto, console or json", c.Log.Format)
	}
	if err := decodeCluster(v, c, src); err != nil {
		return nil, err
	}
	if err := decodeBuild(v, c, src); err != nil {
		return nil, err
	}
	if err := decodeBudgets(v, c); err != nil {
		return nil, err
	}
	if err := decodeHost(v, c, src); err != nil {
		return nil, err
	}
	if err := decodeWorker(v, c, src); err != nil {
		return nil, err
	}
	if err := decodeAgents(v, c, src.file); err != nil {
		return nil, err
	}
	c.Build.Warnings = append(c.Build.Warnings, Redacted(c.Build.Name, c.Build.Components)...)
	return c, nil
}

// Redacted warns of names a stock AgentChat server rewrites: it redacts
// what looks like a secret in every message, so a component named like an
// API key comes back as "kio[REDACTED:openai_api_key]" and no agent can
// claim it by name.
func Redacted(build string, comps []coordinator.Component) []string {
	var out []string
	warn := func(what, name string) {
		if r, kinds := agentchat.Redact(name); len(kinds) > 0 {
			out = append(out, fmt.Sprintf("%s %q looks like a secret (%s) to a stock AgentChat server, which shows it as %q: agents cannot name it; rename it",
				what, name, strings.Join(kinds, ", "), r))
		}
	}
	warn("build", build)
	for _, c := range comps {
		warn("component", c.Name)
	}
	return out
}

// specDir says what is wrong with an owl spec directory that is not
// there, before the spec's own reading looks in it for components.
func specDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: no such directory", dir)
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("%s is a file, not an owl spec directory", dir)
	}
	return nil
}

func decodeBuild(v *viper.Viper, c *Config, src sources) error {
	list, _ := v.Get("build.components").([]any)
	switch {
	case c.Build.Spec != "" && len(list) > 0:
		return errorf("build.spec", "set either build.spec or build.components, not both")
	case c.Build.Spec != "":
		dir := src.path("build.spec", c.Build.Spec)
		if err := specDir(dir); err != nil {
			return errorf("build.spec", "%v", err)
		}
		spec, err := ReadOwlSpec(dir)
		if err != nil {
			return errorf("build.spec", "%v", err)
		}
		c.Build.Components, c.Build.Owl, c.Build.Warnings = spec.Components, spec, spec.Warnings
		return nil
	}
	comps, err := components(list)
	if err != nil {
		return err
	}
	c.Build.Components = comps
	if len(comps) == 0 {
		return nil // commands that run a build ask RequireBuild
	}
	return CheckComponents(comps)
}

// decodeBudgets reads budgets.components and budgets.agents: lists of
// {name, budget} and {id, budget}, as build.components is a list (a map's
// keys would be lowercased and split at each dot by the reader, and
// component names and ids may hold both). A component named must be one
// of the build's, when the build lists them here.
func decodeBudgets(v *viper.Viper, c *Config) error {
	for _, sec := range []struct {
		key, idKey string
		dst        *map[string]coordinator.Limit
		check      func(key, id string) error
	}{
		{"budgets.components", "name", &c.Budgets.Components, func(key, name string) error {
			if len(c.Build.Components) == 0 || slices.Contains(names(c.Build.Components), name) {
				return nil
			}
			if s := suggest.Closest(name, names(c.Build.Components)); s != "" {
				return errorf(key, "%q is not a component of the build (did you mean %s?)", name, s)
			}
			return errorf(key, "%q is not a component of the build: name one of build.components", name)
		}},
		{"budgets.agents", "id", &c.Budgets.Agents, func(key, id string) error {
			if !protocol.ValidAgent(id) {
				return errorf(key, "%q is not a sender id: @ and the agent's id, quoted (\"@b1\": YAML reads a bare @ as reserved)", id)
			}
			return nil
		}},
	} {
		raw := v.Get(sec.key)
		list, ok := raw.([]any)
		if raw != nil && !ok {
			return errorf(sec.key, "is not a list of {%s, budget}: write - {%s: ..., budget: 5}", sec.idKey, sec.idKey)
		}
		for i, item := range list {
			key := fmt.Sprintf("%s[%d]", sec.key, i)
			m, ok := item.(map[string]any)
			if !ok {
				return errorf(key, "is not a mapping with %s and budget", sec.idKey)
			}
			var id, budget string
			var hasID, hasBudget bool
			for k, val := range m {
				switch k {
				case sec.idKey:
					id, hasID = fmt.Sprint(val), true
				case "budget":
					if budget, hasBudget = "", true; val != nil {
						budget = fmt.Sprint(val) // "": none, whatever the default
					}
				default:
					return errorf(key+"."+k, "unknown key (an entry has %s and budget)", sec.idKey)
				}
			}
			if !hasID || !hasBudget {
				return errorf(key, "needs both %s and budget: - {%s: ..., budget: 5}", sec.idKey, sec.idKey)
			}
			if err := sec.check(key+"."+sec.idKey, id); err != nil {
				return err
			}
			l, err := coordinator.ParseLimit(budget)
			if err != nil {
				return errorf(key+".budget", "%v", err)
			}
			if _, dup := (*sec.dst)[id]; dup {
				return errorf(key+"."+sec.idKey, "%q has a budget already, earlier in %s: one entry each", id, sec.key)
			}
			if *sec.dst == nil {
				*sec.dst = make(map[string]coordinator.Limit)
			}
			(*sec.dst)[id] = l
		}
	}
	return nil
}

// RequireBuild refuses a configuration that declares nothing to build, for
// the commands that run or check a build (serve and identity need none).
func (c *Config) RequireBuild() error {
	if len(c.Build.Components) == 0 {
		return errorf("build.components", "no components (list them, or point build.spec at an owl spec)")
	}
	return nil
}

// components reads build.components: a list of {name, depends_on}.
func components(list []any) ([]coordinator.Component, error) {
	var out []coordinator.Component
	for i, item := range list {
		key := fmt.Sprintf("build.components[%d]", i)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, errorf(key, "is not a mapping with name and depends_on")
		}
		var comp coordinator.Component
		for k, val := range m {
			switch k {
			case "name":
				comp.Name = fmt.Sprint(val)
			case "depends_on":
				deps, err := stringList(val)
				if err != nil {
					return nil, errorf(key+".depends_on", "%v", err)
				}
				comp.Deps = deps
			default:
				return nil, errorf(key+"."+k, "unknown key (a component has name and depends_on)")
			}
		}
		out = append(out, comp)
	}
	return out, nil
}

func stringList(val any) ([]string, error) {
	switch t := val.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(t), nil
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%v is not a component name", x)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("is not a list of component names")
}

// CheckComponents checks names and references: every name valid and
// declared once, every dependency declared. Cycles are not an error here:
// the engine reports and halts on them (contract section 5); validate
// reports them too.
func CheckComponents(comps []coordinator.Component) error {
	if len(comps) == 0 {
		return errorf("build.components", "no components (list them, or point build.spec at an owl spec)")
	}
	seen := make(map[string]int, len(comps))
	for i, c := range comps {
		key := fmt.Sprintf("build.components[%d].name", i)
		switch {
		case c.Name == "":
			return errorf(key, "missing")
		case !protocol.ValidComponent(c.Name):
			return errorf(key, "%q is not a component name: up to %d letters, digits, . _ / -, starting with a letter or digit", c.Name, protocol.MaxComponent)
		case strings.Contains(c.Name, "__"):
			return errorf(key, "%q contains __, which chat reads as emphasis and strips", c.Name)
		}
		if j, dup := seen[c.Name]; dup {
			return errorf(key, "%q is declared twice (also build.components[%d])", c.Name, j)
		}
		seen[c.Name] = i
	}
	for i, c := range comps {
		for _, d := range c.Deps {
			if _, ok := seen[d]; !ok {
				key := fmt.Sprintf("build.components[%d].depends_on", i)
				// A misspelt dependency is never the component itself.
				others := slices.DeleteFunc(names(comps), func(n string) bool { return n == c.Name })
				if s := suggest.Closest(d, others); s != "" {
					return errorf(key, "%q is not a component (did you mean %s?)", d, s)
				}
				return errorf(key, "%q is not a component", d)
			}
		}
	}
	return nil
}

func names(comps []coordinator.Component) []string {
	out := make([]string, len(comps))
	for i, c := range comps {
		out[i] = c.Name
	}
	return out
}

// Graph builds the dependency graph of comps, which CheckComponents passed.
func Graph(comps []coordinator.Component) *graph.Graph {
	g := graph.New()
	for _, c := range comps {
		g.Add(c.Name)
	}
	for _, c := range comps {
		a, _ := g.Index(c.Name)
		for _, d := range c.Deps {
			b, _ := g.Index(d)
			g.AddEdge(a, b)
		}
	}
	return g
}

func duration(v *viper.Viper, key string, positive bool) (time.Duration, error) {
	s := v.GetString(key)
	d, err := time.ParseDuration(s)
	switch {
	case err != nil || d < 0:
		return 0, errorf(key, "%q is not a duration like 1s or 500ms", s)
	case positive && d == 0:
		return 0, errorf(key, "%q is not a positive duration like 1s or 500ms", s)
	}
	return d, nil
}

// atMost refuses a value past the bound a run can live with.
func atMost[T int | time.Duration](v, most T, key string) error {
	if v > most {
		return errorf(key, "%v is over the most allowed, %v", v, most)
	}
	return nil
}

func count(v *viper.Viper, key string, least int) (int, error) {
	s := v.GetString(key)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, errorf(key, "%q is not a whole number", s)
	}
	if n < least {
		return 0, errorf(key, "%d is below the least allowed, %d", n, least)
	}
	return n, nil
}

// share reads key as a share of the time: a number from 0 to 1.
func share(v *viper.Viper, key string) (float64, error) {
	s := v.GetString(key)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1 {
		return 0, errorf(key, "%q is not a share from 0 to 1 (0.25: a quarter of the time)", s)
	}
	return f, nil
}

// Engine is the part of the configuration the coordinator engine takes.
// self is foreman's sender id in the room.
func (c *Config) Engine(self string) coordinator.Config {
	mentions := []string{"@" + c.Server.Name}
	if self != "" {
		mentions = append(mentions, self)
	}
	return coordinator.Config{
		Build:      c.Build.Name,
		Self:       self,
		Mentions:   mentions,
		Components: c.Build.Components,
		Roles:      c.Roles,
		Rules:      c.Rules,
		Budgets:    c.Budgets,
	}
}
