package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/logging"
)

// app is what every command shares: where output goes and the global flags.
type app struct {
	stdout, stderr io.Writer
	configFile     string
}

// exitError carries an exit status other than 1, or a failure that has
// already been reported and needs no further message.
type exitError struct {
	code   int
	silent bool
	err    error
}

func (e *exitError) Error() string { return e.err.Error() }

func run(args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.silent {
			fmt.Fprintln(stderr, "foreman:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "foreman:", err)
	return 1
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "foreman",
		Short: "Coordinates AI agents building one piece of software together over chat",
		Long: `foreman joins an AgentChat room and coordinates the agents there: it hands out
components (CLAIM, ACK), watches check-ins (PROGRESS, TIMEOUT), routes work
through audit and CI (READY, REVIEW, AUDIT, FIX, RETRY), handles pushback
(BLOCKED, CONFLICT, WAIT), and escalates to humans what needs a decision.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&a.configFile, "config", "c", os.Getenv("FOREMAN_CONFIG"), "config file (YAML; env FOREMAN_CONFIG)")
	root.PersistentFlags().String("log-level", "", "log level: trace, debug, info, warn, error")
	root.PersistentFlags().String("log-format", "", "log format: auto, console, json")
	root.AddCommand(
		a.versionCommand(),
		a.validateCommand(),
		a.replayCommand(),
		a.runCommand(),
		a.serveCommand(),
		a.identityCommand(),
		a.statusCommand(),
		a.demoCommand(),
		a.agentCommand(),
		a.benchCommand(),
		a.initCommand(),
		a.promptCommand(),
		a.mcpCommand(),
		a.clusterCommand(),
		a.simCommand(),
		a.hostCommand(),
		a.verifyCommand(),
		a.workerCommand(),
		a.natsCommand(),
		a.upCommand(),
		a.boardLoginCommand(),
	)
	return root
}

// globalFlagKeys maps the root's flags to configuration keys.
var globalFlagKeys = map[string]string{
	"log-level":  "log.level",
	"log-format": "log.format",
}

// defaultConfig is the file foreman init writes, read from the working
// directory when no other is named, so that the commands init prints work
// as they are.
const defaultConfig = "foreman.yaml"

// configPath is the config file a command reads: file (its CONFIG
// argument) if given, else --config or FOREMAN_CONFIG, else foreman.yaml
// in the working directory if there is one, else none.
func (a *app) configPath(file string) string {
	if file == "" {
		file = a.configFile
	}
	if file == "" {
		if _, err := os.Stat(defaultConfig); err == nil {
			file = defaultConfig
		}
	}
	return file
}

// configArg is the optional CONFIG argument every command that reads the
// configuration takes.
func configArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return ""
}

// loadConfig loads the configuration every command reads the same way:
// the file configPath finds, FOREMAN_* variables, then cmd's flags, bound
// to the keys flagKeys names.
func (a *app) loadConfig(cmd *cobra.Command, file string, flagKeys map[string]string) (*config.Config, error) {
	file = a.configPath(file)
	keys := map[string]string{}
	for k, v := range globalFlagKeys {
		keys[k] = v
	}
	for k, v := range flagKeys {
		keys[k] = v
	}
	// Unset flags must not override the file: bind only those the user set.
	for name := range keys {
		if f := cmd.Flags().Lookup(name); f == nil || !f.Changed {
			delete(keys, name)
		}
	}
	return config.Load(file, cmd.Flags(), keys)
}

// logger builds the logger the configuration asks for, writing to stderr,
// and logs the configuration's warnings with it.
func (a *app) logger(c *config.Config) (zerolog.Logger, error) {
	log, err := logging.New(a.stderr, c.Log.Level, c.Log.Format)
	if err != nil {
		return log, err
	}
	for _, w := range c.Warnings {
		log.Warn().Msg(w)
	}
	return log, nil
}

// untilInterrupted is cmd's context (the background if it has none, as in
// tests that call RunE), done at SIGINT or SIGTERM.
func untilInterrupted(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
