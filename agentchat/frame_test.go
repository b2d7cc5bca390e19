package agentchat

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Frames the client does not use are read for their type alone, however
// their fields are typed; frames it uses must read whole.
func TestDecodeFrame(t *testing.T) {
	for _, data := range []string{
		`{"type":"PRESENCE_CHANGED","ts":1,"agent_id":"@a","name":"a","presence":"away","status_text":null}`,
		`{"type":"TYPING","ts":1,"from":"@a","from_name":"a","channel":"#build"}`,
		`{"type":"FLOOR_CLAIMED","ts":1,"msg_id":"m","channel":"#build","holder":"@a","holder_name":"a","started_at":5}`,
		`{"type":"YIELD","ts":1,"msg_id":"m","channel":"#build","holder":"@a","holder_started_at":5,"reason":"r"}`,
		`{"type":"NICK_CHANGED","ts":1,"agent_id":"@a","old_nick":"a","new_nick":"b"}`,
		`{"type":"AGENTS","ts":1,"channel":"#build","list":[{"id":"@a","presence":"online"}]}`,
		`{"type":"VERIFY_REQUEST","ts":1,"request_id":"r","from":"@a","nonce":"n"}`,
		// Fields the client would read otherwise, typed as another server
		// version might type them.
		`{"type":"ADMIN_RESULT","ts":1,"verified":"yes","name":{"first":"x"}}`,
		`{"type":"SOMETHING_NEW","ts":"soon","channel":7,"agents":3,"reason":["a"]}`,
	} {
		f := decodeFrame([]byte(data))
		assert.Empty(t, f.bad, data)
		assert.NotEmpty(t, f.Type, data)
	}
	for _, data := range []string{
		`not json`,
		`{"type":"MSG","ts":1,"from":7,"to":"#build","content":"x"}`,
		`{"type":"WELCOME","agent_id":["@a"]}`,
		`{"ts":1,"name":5}`,
	} {
		assert.NotEmpty(t, decodeFrame([]byte(data)).bad, data)
	}
}
