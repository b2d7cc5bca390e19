package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// stateFileVersion is the layout of a state file this server writes.
const stateFileVersion = 1

// stateFile is a State on disk: the keys' first-seen times and each
// channel's history, as a stock server would have them had it kept running.
type stateFile struct {
	Version   int                  `json:"version"`
	Saved     time.Time            `json:"saved"`
	FirstSeen map[string]time.Time `json:"first_seen,omitempty"`
	Channels  []savedChannel       `json:"channels"`
}

type savedChannel struct {
	Name    string      `json:"name"`
	History []*msgFrame `json:"history,omitempty"`
}

// loadStateFile reads the state a server saved when it stopped in order,
// and removes the file: it vouches for that one restart. A server that
// then dies without stopping in order leaves none, and the next room
// starts empty, as a stock server's does: its history proves nothing.
// No file is an empty State.
func loadStateFile(path string, bufferSize int) (*State, bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NewState(), false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("the room's state file %s: %w", path, err)
	}
	var f stateFile
	if err := json.Unmarshal(raw, &f); err != nil || f.Version != stateFileVersion {
		if err == nil {
			err = fmt.Errorf("version %d, this server reads %d", f.Version, stateFileVersion)
		}
		return nil, false, fmt.Errorf("the room's state file %s cannot be read (%v); remove it to start the room empty", path, err)
	}
	st := NewState()
	for id, at := range f.FirstSeen {
		st.firstSeen[id] = at
	}
	for _, c := range f.Channels {
		if !validChannel(c.Name) || st.channels[c.Name] != nil {
			return nil, false, fmt.Errorf("the room's state file %s names channel %q twice or wrongly; remove it to start the room empty", path, c.Name)
		}
		h := slices.DeleteFunc(c.History, func(m *msgFrame) bool { return m == nil })
		h = h[max(0, len(h)-bufferSize):]
		for _, m := range h {
			m.Replay = false
		}
		st.channels[c.Name] = &channel{name: c.Name, verifiedOnly: verifiedOnly[c.Name], history: h, members: map[*conn]*membership{}}
	}
	if err := os.Remove(path); err != nil {
		return nil, false, fmt.Errorf("the room's state file %s could not be removed after reading it (%w): a later restart would trust it again", path, err)
	}
	return st, true, nil
}

// save writes st to path, whole or not at all.
func (st *State) save(path string, now time.Time) error {
	f := stateFile{Version: stateFileVersion, Saved: now, FirstSeen: st.firstSeen}
	for _, ch := range st.channels {
		f.Channels = append(f.Channels, savedChannel{Name: ch.name, History: ch.history})
	}
	slices.SortFunc(f.Channels, func(a, b savedChannel) int { return strings.Compare(a.Name, b.Name) })
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
