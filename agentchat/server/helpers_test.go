package server_test

import (
	"testing"

	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

type obj = chattest.Obj

var (
	start       = chattest.Start
	member      = chattest.Member
	newIdentity = chattest.NewIdentity
	withBuild   = chattest.WithBuild
	wait        = chattest.Wait
)

func dial(t *testing.T, s *server.Server) *chattest.Peer { return chattest.Dial(t, s.URL()) }
