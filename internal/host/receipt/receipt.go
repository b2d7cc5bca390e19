// Package receipt is the landing receipt foreman host gives every commit it
// puts on the target: an in-toto Statement (v1) whose subject is the landed
// commit and its tree, and whose predicate says what was approved, by
// whom, which run's checks passed on that tree, where they ran and how
// they were confined; in a DSSE envelope signed with the host's Ed25519 key
// (its room identity), which the envelope carries. It is kept as a git
// note on the landed commit (refs/notes/foreman), so that anyone with the
// repository and the host's public key can check, commit by commit, that
// the target holds only what foreman approved and tested (foreman verify).
//
// Everything here is pure: the same statement and key always give the
// same receipt (Ed25519 signs deterministically), so the host's core may
// make one without I/O, and a replay makes the same one again.
package receipt

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/agentforeman/foreman/agentchat"
)

// The names a receipt is made of.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType is foreman's landing predicate (Landing), version 2:
	// version 1's fields, and the repository and the landing's place in
	// its chain (Chain); docs/HOST.md, "Landing receipts", says what each
	// field means. Receipts of version 1 (PredicateTypeV1) still open.
	PredicateType   = "https://github.com/agentforeman/foreman/landing/v2"
	PredicateTypeV1 = "https://github.com/agentforeman/foreman/landing/v1"
	// HeadPredicateType is the host's signed head (Head): the newest
	// landing of a repository's chain, signed again at least hourly.
	HeadPredicateType = "https://github.com/agentforeman/foreman/head/v1"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// NotesRef is where the receipts are kept, one note per landed commit.
	NotesRef = "refs/notes/foreman"
)

// Statement is an in-toto Statement v1 about one landed commit.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Landing   `json:"predicate"`
}

// Subject is one artifact the statement is about, by its digests.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Landing is foreman's predicate: one landing of one component.
type Landing struct {
	Host      string   `json:"host"`      // the host's sender id: who landed it, and signed this
	Target    string   `json:"target"`    // the branch, as refs/heads/<name>
	Component string   `json:"component"` // what landed
	Builder   string   `json:"builder"`   // who built it
	Ref       string   `json:"ref"`       // the ref its READY named
	Approved  Approval `json:"approved"`
	LandedOn  string   `json:"landedOn"` // the target's commit before: the landed commit's first parent
	// LandedAs is how (host.land_as): LandedAsMerge, a merge commit whose
	// other parent is Approved.Tip; LandedAsSquash, one commit whose only
	// parent is LandedOn, its tree the merge of LandedOn and Approved.Tip.
	// Receipts from before it was written are merges.
	LandedAs string    `json:"landedAs,omitempty"`
	Commit   string    `json:"commit"` // the landed commit (the subject)
	Tree     string    `json:"tree"`   // its tree (the subject)
	Checks   Checks    `json:"checks"` // the run whose checks passed on Tree, or on its batch's head's tree
	At       time.Time `json:"at"`     // when the host decided to land it, by its clock
	// Repository names the repository it landed in (host.repository): a
	// verifier expects its own, so that a receipt of a fork the same key
	// lands in is not taken for one of this repository. Version 2.
	Repository string `json:"repository,omitempty"`
	// Chain is its place in the repository's chain of landings: version
	// 2; nil in a receipt of version 1.
	Chain *Chain `json:"chain,omitempty"`
	// ChecksChanged names the repository's files that define the checks
	// (a program of host.checks in the worktree, a file its arguments
	// name, a Makefile for make) which this landing changed: the checks
	// that passed on Tree (Checks) were these files as it brings them,
	// never the target's before it. Absent when it changed none; version
	// 2 receipts without it still open.
	ChecksChanged []string `json:"checksChanged,omitempty"`
	// Batch: it landed in a batch, several components by one
	// compare-and-swap: the target went from the first's LandedOn to the
	// head straight, and never held the commits below the head. Checks is
	// the run that passed on the head's tree, which holds this commit's
	// work; this commit's own tree was not checked alone (unless it is the
	// head). Nil for a landing of one component, whose own tree passed.
	Batch *Batch `json:"batch,omitempty"`
	// Cost is what foreman counted the component had cost (issue 47), as
	// its STATUS line said when the host took up the approval. Absent when
	// foreman did not say (it had counted no spend on the component, or
	// counts none): the host does not guess. Receipts without it still
	// open.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is a component's spend as foreman said it: USD as its STATUS line
// writes it (a decimal, no $: "1.25"), and tokens.
type Cost struct {
	USD    string `json:"usd"`
	Tokens int64  `json:"tokens"`
}

// Chain is a landing's place in its repository's chain of receipts, a
// hash chain with a counter: each landing names the receipt of the one
// before it, so that none can be taken out, put in or reordered without
// the chain saying so, and the first names where the host began, so that
// a verifier needs nothing unsigned to know where to start.
type Chain struct {
	Seq int `json:"seq"` // 1 for the first landing of the chain, then one more each
	// Previous is the landing before it: its receipt's digest (StatementDigest);
	// "" for the first.
	Previous string `json:"previous,omitempty"`
	// Start, on the first landing only: the target's commit before the
	// host's first landing, where a verifier's walk ends.
	Start string `json:"start,omitempty"`
}

// Link is the newest landing of a chain, as the host keeps it to chain the
// next one to, and as a head statement names it.
type Link struct {
	Seq    int    `json:"seq"`
	Digest string `json:"digest"` // its receipt's StatementDigest
	Commit string `json:"commit"` // the landed commit
	Start  string `json:"start"`  // where the chain began (its first landing's Chain.Start)
}

// Batch is the landings one compare-and-swap made.
type Batch struct {
	Head    string   `json:"head"`    // the last commit: the target after it, whose tree passed (Checks)
	Commits []string `json:"commits"` // every commit it landed, oldest first, the head last
}

// How a component lands (Landing.LandedAs).
const (
	LandedAsMerge  = "merge"
	LandedAsSquash = "squash"
)

// Approval is what the auditors approved.
type Approval struct {
	Tip string `json:"tip"` // the builder's commit the AUDIT PASS was about: what was checked before review
	// Auditors approved it, as foreman said (approved_by in its STATUS
	// answer), or as the host heard the AUDIT PASS; empty when neither
	// was known to the host: it does not guess.
	Auditors []string `json:"auditors"`
	// Round is which review of the builder's approved it (1: the first),
	// from foreman's count of its failed audits; 0 when not known.
	Round int `json:"round,omitempty"`
}

// Checks is one run of the checks that passed on a tree: what ran, each
// try's log by digest, where and how confined.
type Checks struct {
	Run      int       `json:"run"`
	Kind     string    `json:"kind"`   // check (before review) or car (in the train)
	Commit   string    `json:"commit"` // the commit checked: the landed one, or one with its tree
	Tree     string    `json:"tree"`
	Commands []Command `json:"commands"`
	Tries    []Log     `json:"tries"`           // each run of the commands on this tree, in order: the last passed
	Flaky    []string  `json:"flaky,omitempty"` // commands that failed, then passed on the same tree
	RanOn    []string  `json:"ranOn"`           // "host", or "worker <id>" for each worker that ran some
	Sandbox  string    `json:"sandbox"`         // sha256:<digest of the sandbox profile>, or "off"
}

// Command is one check command and how it ended.
type Command struct {
	Command string `json:"command"` // as a shell would read it back
	Result  string `json:"result"`  // passed
}

// Log is one try's log, by name (in host.logs) and digest.
type Log struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"` // sha256
}

// Passed reports whether every command passed (no command passes, too:
// a host with no checks lands what merges cleanly, and says so).
func (c Checks) Passed() bool {
	for _, cmd := range c.Commands {
		if cmd.Result != "passed" {
			return false
		}
	}
	return true
}

// New is the statement of a landing: its subjects are the landed commit
// (on the target) and its tree. A landing with its place in a chain is of
// version 2; one without, of version 1 (as hosts made them before chains).
func New(l Landing) Statement {
	kind := PredicateType
	if l.Chain == nil {
		kind = PredicateTypeV1
	}
	return Statement{
		Type: StatementType,
		Subject: []Subject{
			{Name: l.Target, Digest: map[string]string{"gitCommit": l.Commit}},
			{Name: "tree", Digest: map[string]string{"gitTree": l.Tree}},
		},
		PredicateType: kind,
		Predicate:     l,
	}
}

// Digest is a content digest as a receipt writes it: sha256 in hex.
func Digest(data []byte) map[string]string {
	sum := sha256.Sum256(data)
	return map[string]string{"sha256": hex.EncodeToString(sum[:])}
}

// Envelope is the DSSE envelope a receipt is kept in, with the signer's
// public key (PEM) beside the signatures. The key is there to name the
// signer (its id is a short hash of it): a verifier trusts only keys it
// was given, never the one in the envelope.
type Envelope struct {
	dsse.Envelope
	PublicKey string `json:"publicKey"`
}

// Signer signs receipts: an agentchat.Identity.
type Signer interface {
	AgentID() string
	PublicPEM() string
	Sign(msg []byte) []byte
}

// Signed is what the host signs: a landing's Statement, or its head's
// HeadStatement.
type Signed interface{ signed() }

func (Statement) signed()     {}
func (HeadStatement) signed() {}

// Sign makes the receipt of s (or its signed head): its DSSE envelope as
// JSON, signed by by.
func Sign(s Signed, by Signer) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	es, err := dsse.NewEnvelopeSigner(dsseSigner{by})
	if err != nil {
		return nil, err
	}
	env, err := es.SignPayload(context.Background(), PayloadType, body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{Envelope: *env, PublicKey: by.PublicPEM()})
}

type dsseSigner struct{ s Signer }

func (d dsseSigner) Sign(_ context.Context, data []byte) ([]byte, error) { return d.s.Sign(data), nil }
func (d dsseSigner) KeyID() (string, error)                              { return d.s.AgentID(), nil }

// Key is a public key a verifier trusts, with the id it signs as.
type Key struct {
	ID  string
	Pub ed25519.PublicKey
}

// KeyOf reads an SPKI PEM Ed25519 public key.
func KeyOf(publicPEM string) (Key, error) {
	pub, err := agentchat.ParsePublicPEM(publicPEM)
	if err != nil {
		return Key{}, err
	}
	return Key{ID: agentchat.AgentIDFor(publicPEM), Pub: pub}, nil
}

func (k Key) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(k.Pub, data, sig) {
		return errors.New("ed25519: invalid signature")
	}
	return nil
}
func (k Key) KeyID() (string, error)   { return k.ID, nil }
func (k Key) Public() crypto.PublicKey { return k.Pub }

// Open checks a receipt against the keys trusted (never against the key
// it carries) and reads its statement, of version 1 or 2; it says who
// signed it. An error says, in words for people, why the receipt is not
// good.
func Open(note []byte, trusted []Key) (Statement, string, error) {
	body, signer, err := open(note, trusted)
	if err != nil {
		return Statement{}, signer, err
	}
	var s Statement
	if err := json.Unmarshal(body, &s); err != nil {
		return Statement{}, signer, fmt.Errorf("its statement cannot be read: %v", err)
	}
	if s.Type != StatementType || s.PredicateType != PredicateType && s.PredicateType != PredicateTypeV1 {
		return Statement{}, signer, fmt.Errorf("a statement of type %s about %s, not a landing", s.Type, s.PredicateType)
	}
	if s.PredicateType == PredicateTypeV1 && (s.Predicate.Chain != nil || s.Predicate.Repository != "") {
		return Statement{}, signer, errors.New("a landing of version 1 with fields of version 2")
	}
	if s.PredicateType == PredicateType && (s.Predicate.Chain == nil || s.Predicate.Repository == "" || s.Predicate.Chain.Seq < 1) {
		return Statement{}, signer, errors.New("a landing of version 2 that names no repository, or no place in a chain")
	}
	return s, signer, nil
}

// open checks a DSSE envelope against the keys trusted and gives its
// payload, and who signed it.
func open(note []byte, trusted []Key) ([]byte, string, error) {
	var env Envelope
	if err := json.Unmarshal(note, &env); err != nil {
		return nil, "", fmt.Errorf("not a receipt: %v", err)
	}
	if env.PayloadType != PayloadType {
		return nil, "", fmt.Errorf("not a receipt: payload type %q, not %s", env.PayloadType, PayloadType)
	}
	if len(env.Signatures) == 0 {
		return nil, "", errors.New("not signed")
	}
	signer := env.Signatures[0].KeyID
	if env.PublicKey != "" {
		if k, err := KeyOf(env.PublicKey); err == nil {
			signer = k.ID
		}
	}
	known := slices.IndexFunc(trusted, func(k Key) bool { return k.ID == signer })
	if known < 0 {
		return nil, signer, fmt.Errorf("signed by %s, which is not a trusted key (the host's, or one given with --trust)", orUnnamed(signer))
	}
	v, err := dsse.NewEnvelopeVerifier(trusted[known])
	if err != nil {
		return nil, signer, err
	}
	_, body, err := v.VerifyAndDecode(context.Background(), &env.Envelope)
	if err != nil {
		return nil, signer, fmt.Errorf("its signature by %s does not verify: the receipt was changed after it was signed", signer)
	}
	return body, signer, nil
}

// StatementDigest is what the next landing of a chain names a receipt by:
// the sha256 of the statement it signs (its DSSE payload), whoever signed
// it. Empty when note is not an envelope.
func StatementDigest(note []byte) string {
	var env Envelope
	if err := json.Unmarshal(note, &env); err != nil || env.Payload == "" {
		return ""
	}
	body, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		if body, err = base64.URLEncoding.DecodeString(env.Payload); err != nil {
			return ""
		}
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HeadStatement is an in-toto Statement v1 about the newest landing of a
// repository's chain: the host's signed head. The host signs it again at
// least hourly (HeadEvery), so that a verifier holding none newer than a
// day can tell a target rolled back, or frozen, from one that is not.
type HeadStatement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Head      `json:"predicate"`
}

// Head is the predicate of a HeadStatement.
type Head struct {
	Host       string    `json:"host"`       // who signed it
	Repository string    `json:"repository"` // host.repository
	Target     string    `json:"target"`     // refs/heads/<name>
	Newest     Link      `json:"newest"`     // the newest landing of the chain
	At         time.Time `json:"at"`         // when the host signed it, by its clock
}

// HeadEvery is how often, at most, the host signs its head again while
// nothing lands: a verifier refuses one older than it allows (foreman
// verify --max-age, a day by default).
const HeadEvery = time.Hour

// HeadRef is where the host keeps its signed head of target (a branch's
// short name): a ref to the envelope's blob.
func HeadRef(target string) string { return "refs/foreman/head/" + target }

// NewHead is the head statement of h: its subject is the newest landed
// commit.
func NewHead(h Head) HeadStatement {
	return HeadStatement{
		Type:          StatementType,
		Subject:       []Subject{{Name: h.Target, Digest: map[string]string{"gitCommit": h.Newest.Commit}}},
		PredicateType: HeadPredicateType,
		Predicate:     h,
	}
}

// OpenHead checks a signed head against the keys trusted and reads it.
func OpenHead(data []byte, trusted []Key) (Head, string, error) {
	body, signer, err := open(data, trusted)
	if err != nil {
		return Head{}, signer, err
	}
	var s HeadStatement
	if err := json.Unmarshal(body, &s); err != nil {
		return Head{}, signer, fmt.Errorf("its statement cannot be read: %v", err)
	}
	if s.Type != StatementType || s.PredicateType != HeadPredicateType {
		return Head{}, signer, fmt.Errorf("a statement of type %s about %s, not a signed head", s.Type, s.PredicateType)
	}
	if len(s.Subject) != 1 || s.Subject[0].Digest["gitCommit"] != s.Predicate.Newest.Commit {
		return Head{}, signer, errors.New("a signed head whose subject is not its newest landing")
	}
	return s.Predicate, signer, nil
}

func orUnnamed(id string) string {
	if id == "" {
		return "an unnamed key"
	}
	return id
}

// Commit is the landed commit a statement names (its gitCommit subject).
func (s Statement) Commit() string { return s.digest("gitCommit") }

// Tree is the tree a statement names (its gitTree subject).
func (s Statement) Tree() string { return s.digest("gitTree") }

func (s Statement) digest(kind string) string {
	for _, sub := range s.Subject {
		if d := sub.Digest[kind]; d != "" {
			return d
		}
	}
	return ""
}

// LoadKey reads a key to trust from a file: a PEM public key (foreman
// identity --public writes one), or an identity file, of which only the
// public key is used.
func LoadKey(path string) (Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "PUBLIC KEY" {
			return Key{}, fmt.Errorf("%s: a PEM %s, not a PUBLIC KEY", path, block.Type)
		}
		return KeyOf(string(pem.EncodeToMemory(block)))
	}
	id, err := agentchat.LoadIdentity(path)
	if err != nil {
		return Key{}, fmt.Errorf("%s: neither a PEM public key nor an identity file (%v)", path, err)
	}
	return KeyOf(id.PublicPEM())
}
