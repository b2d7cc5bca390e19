package agentchat

import "fmt"

// AgentChat's error codes that the client acts on.
const (
	CodeAuthRequired        = "AUTH_REQUIRED"
	CodeBanned              = "BANNED"
	CodeChannelExists       = "CHANNEL_EXISTS"
	CodeChannelNotFound     = "CHANNEL_NOT_FOUND"
	CodeInvalidMsg          = "INVALID_MSG"
	CodeLurkMode            = "LURK_MODE"
	CodeNotAllowed          = "NOT_ALLOWED"
	CodeNotInvited          = "NOT_INVITED"
	CodeRateLimited         = "RATE_LIMITED"
	CodeVerificationExpired = "VERIFICATION_EXPIRED"
	CodeVerificationFailed  = "VERIFICATION_FAILED"
	CodeSessionDisplaced    = "SESSION_DISPLACED" // a frame type, reported as a code
	codeUnexpected          = "UNEXPECTED"
)

// ServerError is an ERROR frame from the server. As an Event it is a
// non-fatal one; returned from Run it is fatal and Advice says, in a
// sentence, what to do about it.
type ServerError struct {
	Code    string
	Message string // the server's own words
	Advice  string
}

func (e *ServerError) Error() string {
	if e.Advice != "" {
		return e.Advice
	}
	return fmt.Sprintf("the chat server refused: %s %s", e.Code, e.Message)
}

// UnreachableError is returned by Run when the first connection could not
// be made: the URL is wrong, or nothing listens there.
type UnreachableError struct {
	URL      string
	Attempts int
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the chat server at %s (%d attempts; last: %v); check server.url, and that the server runs", e.URL, e.Attempts, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// fatal turns an ERROR met while connecting or joining into the error Run
// returns, worded for the person who has to fix it. It returns nil for
// errors that reconnecting may cure.
func fatal(code, msg, agentID, channel string) *ServerError {
	e := &ServerError{Code: code, Message: msg}
	switch code {
	case CodeVerificationFailed:
		e.Advice = fmt.Sprintf("the chat server did not accept the signature of identity %s (%q); the identity file may be damaged, or the server speaks another version of the challenge", agentID, msg)
	case CodeNotAllowed:
		e.Advice = fmt.Sprintf("the chat server admits only allowlisted keys and identity %s is not on its list (%q); ask the server's admin to approve it", agentID, msg)
	case CodeBanned:
		e.Advice = fmt.Sprintf("the chat server has banned identity %s (%q); ask the server's admin", agentID, msg)
	case CodeChannelNotFound:
		e.Advice = fmt.Sprintf("channel %s does not exist on the chat server and foreman may not create it; create %s with a verified identity, or let foreman create it", channel, channel)
	case CodeAuthRequired:
		e.Advice = fmt.Sprintf("channel %s does not exist and only verified agents can create channels; create %s with a verified identity or ask the server's admin", channel, channel)
	case CodeSessionDisplaced:
		e.Advice = fmt.Sprintf("another program connected with the same identity (%s) and the server dropped this one; stop the other instance, or give this one its own identity file", agentID)
	case CodeInvalidMsg, codeUnexpected:
		e.Advice = fmt.Sprintf("the chat server refused foreman's sign-in: %s %s", code, msg)
	default:
		return nil
	}
	return e
}
