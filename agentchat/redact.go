package agentchat

import "regexp"

// A stock AgentChat server rewrites every message's content, a bot's
// included, replacing what looks like a secret with [REDACTED:<kind>]
// (the patterns below are the stock server's built-in ones). A client must
// therefore never match its own messages by content, and a component whose
// name looks like a secret cannot be spoken of: "kiosk-paymentterminaldriver"
// comes back as "kio[REDACTED:openai_api_key]".
var redactions = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"anthropic_api_key", regexp.MustCompile(`sk-ant-[a-zA-Z0-9_-]{20,}`)},
	{"openai_api_key", regexp.MustCompile(`sk-[a-zA-Z0-9]{20,}`)},
	{"github_pat", regexp.MustCompile(`ghp_[a-zA-Z0-9]{36}`)},
	{"github_pat_fine", regexp.MustCompile(`github_pat_[a-zA-Z0-9_]{22,}`)},
	{"github_oauth", regexp.MustCompile(`gho_[a-zA-Z0-9]{36}`)},
	{"aws_access_key", regexp.MustCompile(`AKIA[A-Z0-9]{16}`)},
	{"aws_secret_key", regexp.MustCompile(`(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY)['"=:\s]+[A-Za-z0-9/+=]{40}`)},
	{"slack_token", regexp.MustCompile(`xox[bpaors]-[a-zA-Z0-9-]{10,}`)},
	{"stripe_key", regexp.MustCompile(`[sr]k_(?:live|test)_[a-zA-Z0-9]{20,}`)},
	{"google_api_key", regexp.MustCompile(`AIza[a-zA-Z0-9_-]{35}`)},
	{"jwt", regexp.MustCompile(`eyJ[a-zA-Z0-9_-]{10,}\.eyJ[a-zA-Z0-9_-]{10,}\.[a-zA-Z0-9_-]{10,}`)},
	{"generic_secret", regexp.MustCompile(`(?:api_key|apikey|secret|token|password|credential|auth)['"]?\s*[:=]\s*['"][a-zA-Z0-9_\-/+=]{16,}['"]`)},
}

// Redact rewrites text as a stock server does, and says which kinds of
// secret it found.
func Redact(text string) (string, []string) {
	var kinds []string
	for _, r := range redactions {
		if r.re.MatchString(text) {
			text = r.re.ReplaceAllLiteralString(text, "[REDACTED:"+r.kind+"]")
			kinds = append(kinds, r.kind)
		}
	}
	return text, kinds
}
