package up

import (
	"fmt"
	"net"
	neturl "net/url"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/config"
)

// StockRoom sets what the embedded room takes from the configuration, for
// foreman serve and foreman up alike: the stock channels and channels, the
// room's pace, the log, and the version GET /health reports.
func StockRoom(cfg *server.Config, c *config.Config, log zerolog.Logger, channels []string, version string) {
	cfg.RateLimit = c.Server.RateLimit
	cfg.Channels = append(server.DefaultChannels(), channels...)
	cfg.Logger = log
	cfg.Version = version
}

// ListenAddress is where a room at url is served: its host and port. Only
// a plain ws:// room can be served here; wss:// needs a TLS proxy in
// front, which is the user's to set up.
func ListenAddress(url string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil || u.Scheme != "ws" || u.Host == "" {
		return "", fmt.Errorf("server.url %s is not a ws:// address to listen on: give --listen", url)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80"), nil
	}
	return u.Host, nil
}

// RoomStateFile is where up's room keeps its history over a restart, next
// to the journal: a room and a foreman that stopped together start again
// together, and foreman's catch-up finds every line said before the stop
// in the room's replay (a room that died instead starts empty, and foreman
// says what it may have missed). "" without a journal: foreman then starts
// a new build each time, and needs no history.
func RoomStateFile(c *config.Config) string {
	if c.Journal == "" {
		return ""
	}
	return filepath.Clean(c.Journal) + "-room.json"
}
