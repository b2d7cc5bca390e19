package config

// What foreman up sets for each agent it starts, beside the room's keys:
// where its pushes go, the push gate's URL for host.repo, and its own
// token there (remote.GitServer.GrantPush), which only the environment
// carries: on a command line, ps would show it to every user.
const (
	EnvPushURL   = "FOREMAN_PUSH_URL"
	EnvPushToken = "FOREMAN_PUSH_TOKEN"
)
