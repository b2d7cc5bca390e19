package mcpagent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

const fm = "@00000000000000ff"

func TestReaderLearnsForemanFromItsStamp(t *testing.T) {
	r := Reader{Self: me, Name: "ada"}
	ts := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	evs := r.Message(agentchat.Message{ID: "m1", From: "@00000000000000bb", Content: "ACK db " + me, TS: ts})
	require.Len(t, evs, 1)
	assert.False(t, evs[0].Coordinator, "anyone may say a reply's words")
	assert.Nil(t, evs[0].Reply)

	evs = r.Message(agentchat.Message{ID: "m2", From: fm, FromName: "foreman", TS: ts,
		Content: "ACK db " + me + "\nERROR " + me + " PROGRESS: missing <pct>\nCOMPLETE shop\n[foreman shop/7f3a9c #3-5 sent again after a restart: may repeat]",
		Stamp:   &agentchat.Stamp{Tag: "foreman shop/7f3a9c", Again: true}})
	require.Len(t, evs, 3, "the stamp is not a line")
	assert.Equal(t, fm, r.Coordinator)
	for _, e := range evs {
		assert.True(t, e.Coordinator)
		assert.True(t, e.Again)
		assert.Equal(t, "m2", e.MsgID)
	}
	assert.Equal(t, &Reply{Verb: "ACK", Component: "db", Agent: me}, evs[0].Reply)
	assert.Equal(t, &Reply{Verb: "ERROR", Agent: me, Text: "PROGRESS: missing <pct>"}, evs[1].Reply)
	assert.Equal(t, &Reply{Verb: "COMPLETE", Build: "shop"}, evs[2].Reply)

	b, err := json.Marshal(evs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"line","ts":"2026-05-01T12:00:00Z","msg_id":"m2","from":"`+fm+`","from_name":"foreman","coordinator":true,"again":true,
		"text":"ACK db `+me+`","reply":{"verb":"ACK","component":"db","agent":"`+me+`"}}`, string(b))
}

func TestReaderLearnsForemanFromTasks(t *testing.T) {
	r := Reader{Self: me}
	r.Message(agentchat.Message{From: fm, Content: "TASKS db api"})
	assert.Equal(t, fm, r.Coordinator)
	r.Message(agentchat.Message{From: "@00000000000000bb", Content: "TASKS x"})
	assert.Equal(t, fm, r.Coordinator, "the first")
}

func TestMentions(t *testing.T) {
	r := Reader{Self: me, Name: "ada"}
	assert.True(t, r.Mentions("ask @ada"))
	assert.True(t, r.Mentions("ask "+me+" please"))
	assert.False(t, r.Mentions("ask @adam"))
	assert.True(t, r.Mentions("@adam or @ada?"))
}

func TestPercentLeft(t *testing.T) {
	p, ok := percentLeft("after ABORT by @x (timeout): progress 60%, PR pr/1")
	assert.True(t, ok)
	assert.Equal(t, 60, p)
	_, ok = percentLeft("after TIMEOUT of @x: no progress reported")
	assert.False(t, ok)
}
