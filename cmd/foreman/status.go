package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/web"
	"github.com/agentforeman/foreman/protocol"
)

func (a *app) statusCommand() *cobra.Command {
	var (
		noColor bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status [CONFIG]",
		Short: "Show the build as a running foreman sees it",
		Long: `status asks a running foreman (foreman up, or foreman run with http.listen set) for the build
and prints it as a table: each component's state, owner, progress, branch
(where its work in progress is), next deadline, and what it waits on, what
it overlaps or why it is held, under a header with the
build's name, how many components are merged, and whether it is paused,
halted or complete. Owners are shown by name with their sender id
(b1 @cb883c6b0913051a), as the room named them. It reads the same JSON as the
web board (/api/view), from the config's http.listen (as foreman run serves
it), or --board. (--url, as everywhere else, would be the chat server's.)
Where foreman host (same config) has written its queue
(host.logs/queue.json), the CI queue follows. Colours are used on a terminal only (and never with NO_COLOR set). It exits 1
when foreman has no current board to give (starting, or stopped).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("url") {
				return errors.New("--url is the chat server's address, as in every other command; the board's is --board (default: http.listen)")
			}
			c, err := a.loadConfig(cmd, configArg(args), map[string]string{"board": "http.listen"})
			if err != nil {
				return err
			}
			url, err := boardURL(c.HTTP)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			b, err := fetchBoard(ctx, url)
			if err != nil {
				return err
			}
			color := !noColor && os.Getenv("NO_COLOR") == "" && colorTerminal(a.stdout)
			writeStatus(a.stdout, b, color)
			writeHostQueue(a.stdout, c.Host.Logs, time.Now())
			if b.View == nil || b.Stale {
				return &exitError{code: 1, silent: true, err: errors.New(b.Problem)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.String("board", "", "where foreman serves its board (default: http.listen, 127.0.0.1:9090)")
	f.String("url", "", "not status's: the chat server's address elsewhere; use --board")
	_ = f.MarkHidden("url")
	f.BoolVar(&noColor, "no-color", false, "no colours, even on a terminal")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for foreman to answer")
	return cmd
}

// boardURL is where to ask for the board foreman serves on listen. An
// address that listens everywhere is asked on this machine.
func boardURL(listen string) (string, error) {
	if strings.Contains(listen, "://") {
		return listen, nil
	}
	if listen == "" {
		return "", errors.New("http.listen is off (\"\"), so foreman serves no board: set it, or give --board")
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("http.listen %q is not host:port: %w", listen, err)
	}
	if port == "0" {
		return "", fmt.Errorf("http.listen %s picks a free port at each start: give --board with the one foreman up printed (or foreman run logged)", listen)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// fetchBoard reads /api/view. A 503 still carries a board that says what
// is wrong (starting, the bot not answering), so its body is read too.
func fetchBoard(ctx context.Context, base string) (*web.Board, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	url := strings.TrimRight(base, "/") + "/api/view"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--board: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach foreman at %s (is foreman up, or foreman run, serving http.listen there?): %w", base, err)
	}
	defer resp.Body.Close()
	var b web.Board
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&b); err != nil {
		return nil, fmt.Errorf("%s answered %s, not a board: %w", url, resp.Status, err)
	}
	if b.View == nil && b.Problem == "" {
		b.Problem = "foreman answered " + resp.Status + " with no build"
	}
	return &b, nil
}

// colorTerminal reports whether w is a terminal.
func colorTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// ANSI styles for the states; the state is always written too.
var stateStyle = map[string]string{
	"pending":  "2",
	"building": "34",
	"blocked":  "33",
	"ci":       "35",
	"review":   "36",
	"merged":   "32",
	"held":     "1;31",
}

func paint(on bool, style, s string) string {
	if !on || style == "" {
		return s
	}
	return "\x1b[" + style + "m" + s + "\x1b[0m"
}

func writeStatus(w io.Writer, b *web.Board, color bool) {
	v := b.View
	if v == nil {
		fmt.Fprintln(w, "foreman:", b.Problem)
		writeRoom(w, b, color)
		return
	}
	state, style := buildState(v)
	fmt.Fprintf(w, "build %s: %s, %d of %d merged\n", v.Build, paint(color, style, state), v.Merged, len(v.Components))
	if b.Problem != "" {
		fmt.Fprintln(w, "foreman:", paint(color, "1;31", b.Problem))
	}
	writeSpend(w, v, b.Names)
	writeRoom(w, b, color)
	fmt.Fprintln(w)

	rows := [][]string{{"COMPONENT", "STATE", "OWNER", "PROGRESS", "BRANCH", "NEXT DEADLINE", "WAITS / ESCALATION"}}
	styles := []string{""}
	for _, c := range v.Components {
		rows = append(rows, []string{c.Name, c.State, ownerOf(c, b.Names), progressOf(c), branchOf(c), deadlineOf(c, b.Now, v.Paused), cutRunes(notesOf(c, b.Escalations, b.Names), 72)})
		styles = append(styles, stateStyle[c.State])
	}
	writeTable(w, rows, func(row, col int, cell string) string {
		if row == 0 {
			return paint(color, "1", cell)
		}
		if col == 1 || (col == 6 && v.Components[row-1].Escalation != "") {
			return paint(color, styles[row], cell)
		}
		return cell
	})
	writeAgents(w, b.Agents, color)

	if len(b.Escalations) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, paint(color, "1;31", "needs a decision:"))
		subjects := make([]string, 0, len(b.Escalations))
		for s := range b.Escalations {
			subjects = append(subjects, s)
		}
		sort.Strings(subjects)
		for _, s := range subjects {
			e := b.Escalations[s]
			line := "  " + s + ": " + e.Code
			if e.Text != "" {
				line += ": " + e.Text
			}
			fmt.Fprintln(w, line)
		}
	}
}

// writeAgents lists the processes of the agents foreman up runs.
func writeAgents(w io.Writer, list []agents.Status, color bool) {
	if len(list) == 0 {
		return
	}
	fmt.Fprintln(w)
	rows := [][]string{{"AGENT", "ROLE", "STATE", "PID", "RESTARTS", "LAST EXIT", "WHY", "LOG"}}
	for _, a := range list {
		pid := "-"
		if a.Pid != 0 {
			pid = strconv.Itoa(a.Pid)
		}
		rows = append(rows, []string{a.Name, a.Role, string(a.State), pid, strconv.Itoa(a.Restarts), dash(a.LastExit), cutRunes(dash(a.Reason), 72), a.Log})
	}
	writeTable(w, rows, func(row, col int, cell string) string {
		if row == 0 {
			return paint(color, "1", cell)
		}
		if col == 2 && list[row-1].State != agents.Running {
			return paint(color, "33", cell)
		}
		return cell
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func buildState(v *coordinator.View) (text, style string) {
	switch {
	case v.Complete:
		return "COMPLETE", "1;32"
	case len(v.Halted) > 0:
		return "HALTED by a cycle " + strings.Join(v.Halted, " -> "), "1;31"
	case v.Paused:
		return "PAUSED", "1;33"
	case !v.Started:
		return "not started", ""
	case v.Overtime:
		return "running, overtime", "33"
	}
	return "running", "1"
}

func writeRoom(w io.Writer, b *web.Board, color bool) {
	writeLeaders(w, b)
	h := b.Health
	if h.Healthy {
		fmt.Fprintf(w, "room: in the room, %d replies queued, %d messages sent\n", b.Room.Queued, b.Room.MessagesSent)
		return
	}
	fmt.Fprintln(w, "room:", paint(color, "31", strings.Join(h.Problems, "; ")))
}

// writeLeaders says, in a cluster, which process leads which build.
func writeLeaders(w io.Writer, b *web.Board) {
	for _, l := range b.Cluster {
		who := "nobody (a standby takes it over)"
		if l.Leader != "" {
			who = fmt.Sprintf("%s, epoch %d", l.Leader, l.Epoch)
			if l.This {
				who += " (this process)"
			}
		}
		line := fmt.Sprintf("led by: %s", who)
		if len(b.Cluster) > 1 {
			line = fmt.Sprintf("build %s led by: %s", l.Build, who)
		}
		if l.Problem != "" {
			line += "; " + l.Problem
		}
		fmt.Fprintln(w, line)
	}
}

func ownerOf(c coordinator.ComponentView, names map[string]string) string {
	switch {
	case c.Owner != "":
		return named(c.Owner, names)
	case c.BuiltBy != "":
		return named(c.BuiltBy, names)
	}
	return "-"
}

// named shows a sender id with the name the room gave it: "b1 @cb88...".
// The id stays whole, to be typed back (ASSIGN c @id).
func named(id string, names map[string]string) string {
	if n := names[id]; n != "" && "@"+n != id {
		return n + " " + id
	}
	return id
}

func namedAll(ids []string, names map[string]string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = named(id, names)
	}
	return out
}

func progressOf(c coordinator.ComponentView) string {
	switch {
	case c.State == "merged":
		return "done"
	case c.HasProgress:
		return fmt.Sprintf("%d%%", c.Progress)
	}
	return "-"
}

// branchOf is where c's work in progress is: the last ref named for it
// (contract section 10), cut to keep the table narrow.
func branchOf(c coordinator.ComponentView) string {
	if c.Branch == "" {
		return "-"
	}
	return cutRunes(c.Branch, 32)
}

// deadlineOf counts down from the server's clock, not this machine's.
func deadlineOf(c coordinator.ComponentView, now time.Time, paused bool) string {
	if c.Next == "" || c.Deadline.IsZero() {
		return "-"
	}
	if paused {
		return c.Next + " (paused)"
	}
	left := c.Deadline.Sub(now)
	if left <= 0 {
		return c.Next + " due now"
	}
	return c.Next + " in " + shortDuration(left)
}

func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// notesOf says why a component is where it is, the most pressing first.
func notesOf(c coordinator.ComponentView, esc map[string]web.Escalation, names map[string]string) string {
	var notes []string
	if c.Escalation != "" {
		n := "ESCALATED " + c.Escalation
		if e, ok := esc[c.Name]; ok && e.Text != "" {
			n += ": " + e.Text
		}
		notes = append(notes, n)
	}
	if len(c.Waits) > 0 {
		notes = append(notes, "waits on "+strings.Join(c.Waits, ", "))
	}
	if len(c.Overlaps) > 0 {
		notes = append(notes, "overlaps "+strings.Join(c.Overlaps, ", "))
	}
	if len(c.Barred) > 0 {
		notes = append(notes, "barred "+strings.Join(namedAll(c.Barred, names), ", "))
	}
	if c.Pushback != "" {
		notes = append(notes, "pushback "+c.Pushback)
	}
	if c.Audits != "" && !strings.HasPrefix(c.Audits, "0/") {
		notes = append(notes, "failed audits "+c.Audits)
	}
	if c.CI != "" {
		notes = append(notes, "ci "+c.CI+", conflicts "+c.Conflicts)
	}
	if c.Claimable {
		notes = append(notes, "claimable")
	}
	if c.Approved {
		notes = append(notes, "approved, waiting for MERGED")
	}
	if !c.Spent.IsZero() || c.Budget != nil {
		notes = append(notes, "spent "+costOf(c.Spent, c.Budget))
	}
	if len(notes) == 0 {
		return "-"
	}
	return strings.Join(notes, "; ")
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// writeTable pads by characters before styling, since escape codes have
// no width on a terminal (text/tabwriter would count them).
func writeTable(w io.Writer, rows [][]string, style func(row, col int, cell string) string) {
	var widths []int
	for _, r := range rows {
		for i, cell := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var sb strings.Builder
	for ri, r := range rows {
		sb.Reset()
		for ci, cell := range r {
			sb.WriteString(style(ri, ci, cell))
			if ci < len(r)-1 {
				sb.WriteString(strings.Repeat(" ", widths[ci]-utf8.RuneCountInString(cell)+2))
			}
		}
		fmt.Fprintln(w, sb.String())
	}
}

// writeSpend says what the build and each agent spent (docs/BUDGETS.md),
// when anything was spent or budgeted.
func writeSpend(w io.Writer, v *coordinator.View, names map[string]string) {
	if v.Spent.IsZero() && v.Budget == nil && len(v.Agents) == 0 {
		return
	}
	line := "spent " + costOf(v.Spent, v.Budget)
	for _, a := range v.Agents {
		line += "; " + named(a.ID, names) + " " + costOf(a.Spent, a.Budget)
		if a.Holds != "" {
			line += " (on " + a.Holds + ")"
		}
	}
	fmt.Fprintln(w, line)
}

// costOf writes spend, and the budget it counts against: $1.10 and 1000
// tokens of $5.00.
func costOf(c coordinator.Cost, budget *coordinator.Limit) string {
	s := protocol.FormatUSD(c.USD)
	if c.Tokens > 0 {
		s += fmt.Sprintf(" and %d tokens", c.Tokens)
	}
	if budget != nil {
		s += " of " + budget.String()
	}
	return s
}
