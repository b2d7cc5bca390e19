package otlp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentforeman/foreman/coordinator"
)

// LoadSecret reads the secret agents' tokens are made from, creating it
// (32 random bytes, mode 0600) when the file is missing.
func LoadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 16 {
			return nil, fmt.Errorf("%s holds %d bytes; a secret needs at least 16 (delete it and foreman makes one)", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	b = make([]byte, 32)
	rand.Read(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another foreman made it meanwhile
		return LoadSecret(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	return b, f.Close()
}

// ExportInterval is how often an agent's exporter sends: it bounds how far
// spend can overshoot a budget (docs/BUDGETS.md).
const ExportInterval = 5 * time.Second

// Env is the exporter environment of an agent that reports its spend to
// foreman at endpoint (http://host:port of http.listen): Claude Code's
// telemetry switch, OTLP/HTTP protobuf to foreman, the agent's token and
// the attribute that names it, and export intervals of ExportInterval.
func Env(endpoint, agent, token string) []string {
	ms := fmt.Sprint(ExportInterval.Milliseconds())
	return []string{
		"CLAUDE_CODE_ENABLE_TELEMETRY=1",
		"OTEL_METRICS_EXPORTER=otlp",
		"OTEL_LOGS_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + strings.TrimSuffix(endpoint, "/"),
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer " + token,
		"OTEL_RESOURCE_ATTRIBUTES=" + AgentAttribute + "=" + agent,
		"OTEL_METRIC_EXPORT_INTERVAL=" + ms,
		"OTEL_LOGS_EXPORT_INTERVAL=" + ms,
	}
}

// LateSink is a Sink whose engine is attached after the receiver is
// served (the board starts before the bot): until then it refuses, and
// exporters send again.
type LateSink struct{ s atomic.Pointer[Sink] }

// Attach sets the sink spend goes to.
func (l *LateSink) Attach(s Sink) { l.s.Store(&s) }

// Spend hands the batch on, or refuses before Attach.
func (l *LateSink) Spend(ctx context.Context, batch []coordinator.Spend) error {
	s := l.s.Load()
	if s == nil {
		return errors.New("foreman is starting")
	}
	return (*s).Spend(ctx, batch)
}
