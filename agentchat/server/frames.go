package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"time"
)

// msgFrame is a chat message as broadcast and kept in history. Notices
// (from @server) carry no msg_id and no verified flag.
type msgFrame struct {
	Type      string `json:"type"`
	TS        int64  `json:"ts"`
	From      string `json:"from"`
	FromName  string `json:"from_name"`
	To        string `json:"to"`
	Content   string `json:"content"`
	MsgID     string `json:"msg_id,omitempty"`
	Verified  *bool  `json:"verified,omitempty"`
	Sig       string `json:"sig,omitempty"`
	InReplyTo string `json:"in_reply_to,omitempty"`
	Replay    bool   `json:"replay,omitempty"`
}

// fields is any other server frame; every server frame carries ts.
type fields map[string]any

func frame(typ string, f fields) []byte {
	if f == nil {
		f = fields{}
	}
	f["type"] = typ
	f["ts"] = time.Now().UnixMilli()
	data, err := json.Marshal(f)
	if err != nil {
		panic(err) // only strings, numbers, bools, slices and maps go in
	}
	return data
}

func errorFrame(code, msg string) []byte {
	return frame("ERROR", fields{"code": code, "message": msg})
}

func (m *msgFrame) bytes() []byte {
	data, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return data
}

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// randomText is n characters of alphabet.
func randomText(n int, alphabet string) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newMsgID is "<ms>-<6 base36>", as a stock server writes them.
func newMsgID(now time.Time) string {
	return strconv.FormatInt(now.UnixMilli(), 10) + "-" + randomText(6, base36)
}

func newChallengeID(now time.Time) string {
	return "chal_" + strconv.FormatInt(now.UnixMilli(), 36) + "_" + randomHex(4)
}

var (
	channelRE = regexp.MustCompile(`^#[A-Za-z0-9_-]{1,31}$`)
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
)

func validChannel(s string) bool { return channelRE.MatchString(s) }
func validName(s string) bool    { return nameRE.MatchString(s) }

// maxContent is the stock server's content limit, which it counts in
// JavaScript string length (UTF-16 code units).
const maxContent = 2 * 1024 * 1024

func contentTooLong(s string) bool {
	if len(s) <= maxContent {
		return false // UTF-16 never needs more units than UTF-8 bytes
	}
	return jsLen(s) > maxContent
}

// raw is a client frame, read loosely: a field of the wrong JSON type
// reads as missing, as the stock server's checks treat it.
type raw map[string]json.RawMessage

func (r raw) str(key string) (string, bool) {
	v, ok := r[key]
	if !ok || string(v) == "null" { // JSON null reads into a string without complaint
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// present: the field is there and not null.
func (r raw) present(key string) bool {
	v, ok := r[key]
	return ok && string(v) != "null"
}

// has: the field is there, null included.
func (r raw) has(key string) bool {
	_, ok := r[key]
	return ok
}

// text: the field is a string that is not empty.
func (r raw) text(key string) bool {
	s, ok := r.str(key)
	return ok && s != ""
}

// truthy: the field is there and JavaScript would count it true (not
// null, false, 0 or "").
func (r raw) truthy(key string) bool {
	v, ok := r[key]
	if !ok {
		return false
	}
	switch string(v) {
	case "null", "false", `""`:
		return false
	}
	if r.isNumber(key) {
		return r.nonzero(key)
	}
	return true
}

func (r raw) isNumber(key string) bool {
	v, ok := r[key]
	if !ok || len(v) == 0 || v[0] == '"' {
		return false
	}
	var n json.Number
	return json.Unmarshal(v, &n) == nil
}

// nonzero: the field is a number other than 0.
func (r raw) nonzero(key string) bool {
	if !r.isNumber(key) {
		return false
	}
	var f float64
	return json.Unmarshal(r[key], &f) == nil && f != 0
}

func (r raw) isArray(key string) bool {
	v := r[key]
	return len(v) > 0 && v[0] == '['
}

// isObject: an object or an array, as JavaScript's typeof says "object"
// for both (null is left out by the callers' truthiness check).
func (r raw) isObject(key string) bool {
	v := r[key]
	return len(v) > 0 && (v[0] == '{' || v[0] == '[')
}

// number reads a JSON number as JavaScript would print it in a template
// string, which is how the signed text is built on a stock server.
func (r raw) number(key string) (string, bool) {
	v, ok := r[key]
	if !ok || len(v) == 0 || v[0] == '"' {
		return "", false
	}
	var n json.Number
	if json.Unmarshal(v, &n) != nil {
		return "", false
	}
	if i, err := n.Int64(); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	f, err := n.Float64()
	if err != nil {
		return "", false
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}
