package natsauth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// revokedFrom is the time a key is revoked at: every JWT issued to it
// before then, which is every JWT it will ever have (a key is made for
// one user, never again). Not the clock of the machine that revokes: a
// user JWT stamped by a clock a minute ahead would be issued "after" a
// revocation at now, and stay valid.
var revokedFrom = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Revoke revokes every user made in dir under name (foreman nats creds):
// their keys go into the account's revocations (every JWT of theirs,
// whenever issued), the account's JWT is signed again by the operator and
// kept in dir (account.jwt, and the accounts.conf a server starts from).
// It returns the JWT, for Push to hand a running server, and the keys
// revoked.
func Revoke(dir, name string) (accJWT string, keys []string, err error) {
	users, err := os.ReadFile(filepath.Join(dir, usersFile))
	if err != nil {
		return "", nil, fmt.Errorf("%w (foreman nats creds records each user it makes there)", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(users))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[1] == name {
			keys = append(keys, f[2])
		}
	}
	if len(keys) == 0 {
		return "", nil, fmt.Errorf("no user named %q was made in %s (foreman nats creds records each user it makes in %s)", name, dir, usersFile)
	}
	data, err := os.ReadFile(filepath.Join(dir, accountJWT))
	if err != nil {
		return "", nil, fmt.Errorf("%w: accounts made by an older foreman nats init keep no account.jwt; make them again", err)
	}
	ac, err := jwt.DecodeAccountClaims(strings.TrimSpace(string(data)))
	if err != nil {
		return "", nil, err
	}
	op, err := readSeed(keyFile(dir, "operator"))
	if err != nil {
		return "", nil, err
	}
	for _, k := range keys {
		ac.RevokeAt(k, revokedFrom)
	}
	accJWT, err = ac.Encode(op)
	if err != nil {
		return "", nil, err
	}
	return accJWT, keys, writeAccount(dir, accJWT)
}

// SystemCreds is the system account's user Init made: what Push signs in
// with.
func SystemCreds(dir string) string { return filepath.Join(dir, sysCreds) }

// Push hands a running server the account's JWT through NATS's own
// resolver ($SYS.REQ.CLAIMS.UPDATE, on a connection of the system
// account's user): the server takes it at once, closes the connections of
// the users it revokes, and refuses them from then on.
func Push(ctx context.Context, nc *nats.Conn, accJWT string) error {
	m, err := nc.RequestWithContext(ctx, "$SYS.REQ.CLAIMS.UPDATE", []byte(accJWT))
	if err != nil {
		return fmt.Errorf("the server did not take the account's JWT: %w (is its resolver full or cache, as docs/nats/foreman.conf's?)", err)
	}
	var r struct {
		Data *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"data"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return fmt.Errorf("the server's answer is not JSON: %q", m.Data)
	}
	if r.Error != nil {
		return fmt.Errorf("the server refused the account's JWT: %s", r.Error.Description)
	}
	if r.Data == nil || r.Data.Code != 200 {
		return fmt.Errorf("the server did not say it took the account's JWT: %q", m.Data)
	}
	return nil
}

// Claims asks the server for the account's JWT as its resolver holds it
// now (ClaimsSubject): nil and no error when the server has no such
// service (not operator mode, or a memory resolver).
func Claims(ctx context.Context, nc *nats.Conn) (*jwt.AccountClaims, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	m, err := nc.RequestWithContext(ctx, ClaimsSubject, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(m.Data) == 0 {
		return nil, errors.New("the server's resolver holds no JWT of the account")
	}
	return jwt.DecodeAccountClaims(string(m.Data))
}

// WorkerSets checks that userJWT is a user the account's worker signing
// key made, named name, with public key key, not revoked by the account
// (nor expired), and returns the label sets it was made for.
func WorkerSets(ac *jwt.AccountClaims, userJWT, name, key string) ([]string, error) {
	if userJWT == "" {
		return nil, errors.New("it showed no user JWT")
	}
	uc, err := jwt.DecodeUserClaims(userJWT)
	if err != nil {
		return nil, fmt.Errorf("its user JWT: %w", err)
	}
	scope, ok := ac.SigningKeys.GetScope(uc.Issuer)
	us, scoped := scope.(*jwt.UserScope)
	switch {
	case uc.Subject != key:
		return nil, fmt.Errorf("its user JWT is of key %s, not the key it signs with", uc.Subject)
	case uc.Name != name:
		return nil, fmt.Errorf("its user JWT is user %q's", uc.Name)
	case uc.IssuerAccount != ac.Subject || !ok || !scoped || us.Role != RoleWorker:
		return nil, errors.New("its user JWT is not signed by the account's worker signing key")
	case ac.IsClaimRevoked(uc):
		return nil, errors.New("it is revoked (foreman nats revoke)")
	case uc.Expires != 0 && time.Unix(uc.Expires, 0).Before(time.Now()):
		return nil, errors.New("its user JWT has expired")
	}
	var sets []string
	for _, t := range uc.Tags {
		if s, ok := strings.CutPrefix(t, "set:"); ok {
			sets = append(sets, s)
		}
	}
	return sets, nil
}
