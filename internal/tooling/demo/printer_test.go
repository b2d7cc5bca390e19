package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/agentchat"
)

var members = map[string]Member{
	"@f00": {Name: "foreman", Role: RoleCoordinator},
	"@a11": {Name: "ada", Role: "builder"},
	"@0b0": {Name: "olga", Role: "operator"},
}

func TestClock(t *testing.T) {
	assert.Equal(t, "00:00", Clock(0))
	assert.Equal(t, "00:00", Clock(-time.Second))
	assert.Equal(t, "00:31", Clock(31*time.Minute+59*time.Second))
	assert.Equal(t, "02:05", Clock(2*time.Hour+5*time.Minute))
}

func TestPrinterShowsNamesAndRoles(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, false, members)
	p.Print("00:14", p.Member("@f00"), "ACK db @a11")
	p.Print("00:15", p.Member("@zzz"), "hello")
	assert.Equal(t, "00:14  foreman  coordinator ACK db @ada\n00:15  @zzz                 hello\n", out.String())
}

func TestPrinterColoursByRoleAndVerb(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, true, members)
	say := func(from, line string) string {
		out.Reset()
		p.Print("01:00", p.Member(from), line)
		return out.String()
	}
	assert.Contains(t, say("@f00", "ESCALATE payments hard-blocker x"), alarm+"ESCALATE payments")
	assert.Contains(t, say("@f00", "TIMEOUT catalog @a11"), warn+"TIMEOUT catalog @ada")
	assert.Contains(t, say("@f00", "RETRY cart @a11"), warn+"RETRY")
	assert.Contains(t, say("@f00", "MERGED db"), green+"MERGED db")
	assert.Contains(t, say("@f00", "COMPLETE bookshop"), done+"COMPLETE")
	assert.Contains(t, say("@a11", "CLAIM db"), cyan+"ada")
	assert.Contains(t, say("@a11", "ABORT db x"), red+"ABORT")
	assert.Contains(t, say("@0b0", "RESOLVE payments"), yellow+"olga")
	assert.True(t, strings.HasSuffix(say("@a11", "PROGRESS db 25"), dim+"PROGRESS db 25"+reset+"\n"))
}

func TestQuietShowRecordsWithoutPrinting(t *testing.T) {
	var out bytes.Buffer
	s := &show{o: Options{Minute: 100 * time.Millisecond, Quiet: true}, res: &Result{}, complete: make(chan struct{}),
		printer: NewPrinter(&out, false, members), coordinator: "@f00"}
	start := time.UnixMilli(1_000_000)
	s.start.Store(start.UnixMilli())
	s.heard(agentchat.Message{From: "@a11", TS: start.Add(300 * time.Millisecond), Content: "CLAIM db"})
	s.heard(agentchat.Message{From: "@f00", TS: start.Add(time.Second), Content: "MERGED db\nCOMPLETE bookshop"})
	assert.Empty(t, out.String())
	assert.Equal(t, []Entry{
		{At: 3 * time.Minute, From: "@a11", Member: members["@a11"], Line: "CLAIM db"},
		{At: 10 * time.Minute, From: "@f00", Member: members["@f00"], Line: "MERGED db"},
		{At: 10 * time.Minute, From: "@f00", Member: members["@f00"], Line: "COMPLETE bookshop"},
	}, s.res.Room)
	select {
	case <-s.complete:
	default:
		t.Fatal("COMPLETE from foreman ends the show")
	}
	r := s.result()
	assert.True(t, r.Complete)
	assert.Equal(t, time.Second, r.Real)
	assert.Equal(t, 10*time.Minute, r.Contract)
	assert.Equal(t, 1, r.Claims)
	assert.Equal(t, 1, r.Merges)
}

func TestSummary(t *testing.T) {
	r := &Result{Build: "bookshop", Components: 7, Complete: true, Merges: 7, Timeouts: 1, Retries: 1, Escalations: 1,
		Real: 15660 * time.Millisecond, Contract: 156 * time.Minute, Minute: 100 * time.Millisecond}
	var out bytes.Buffer
	r.WriteSummary(&out, false)
	assert.Equal(t, "\nbookshop complete: 7 components merged in 02:36 contract time (15.7s real; one contract minute = 100ms)\n"+
		"claims 0, rejects 0, timeouts 1, retries 1, fixes 0, escalations 1, merges 7\n", out.String())
	r.Complete, r.Merges = false, 2
	out.Reset()
	r.WriteSummary(&out, false)
	assert.Contains(t, out.String(), "bookshop not complete: 2 of 7 components merged after 02:36 contract time")
	r.Virtual = true
	out.Reset()
	r.WriteSummary(&out, false)
	assert.Contains(t, out.String(), "after 02:36 contract time (on a virtual clock)\n", "no real time to tell")
}
