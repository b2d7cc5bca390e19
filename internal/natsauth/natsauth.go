// Package natsauth makes the NATS accounts a team's foreman runs on, in
// NATS's operator mode, with no tool but foreman (no nsc): an operator, a
// system account, and the account FOREMAN with JetStream, whose users are
// signed by a signing key per role. Each role's key is scoped: whatever
// user it signs gets that role's permissions and nothing else, so a key
// that signs workers can make only workers. A worker's permissions are a
// template the server fills with the user's own name ({{name()}}) and the
// label sets it was made for ({{tag(set)}}): every worker has its own
// user, inbox, results, logs and presence, and adding one is `foreman nats
// creds`, never an edit of the server's configuration.
//
// Init writes the directory the server's configuration includes
// (docs/nats/foreman.conf: include "/etc/nats/foreman/accounts.conf"):
//
//	accounts.conf   the operator, the accounts and the resolver, for the server
//	operator.jwt    the operator's JWT
//	account.jwt     the account FOREMAN's JWT, as last signed (revocations included)
//	system.jwt      the system account's JWT
//	jwt/            the resolver's store: the server keeps the accounts' JWTs there
//	keys/*.nk       the seeds: the operator's, the account's, each role's signing key
//	sys.creds       a user of the system account: foreman nats revoke pushes the
//	                account's JWT to a running server with it
//	users           every user made: "<role> <name> <public key>" a line
//
// The seeds and sys.creds are secrets of whoever makes users: the server
// needs none.
package natsauth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/agentforeman/foreman/internal/natsname"
)

// Account is the NATS account every foreman process of a team signs in to.
const Account = "FOREMAN"

// The roles a user can be made for: cluster's.
const (
	RoleForeman = "foreman"
	RoleHost    = "host"
	RoleWorker  = "worker"
	RoleReader  = "reader"
)

// Roles are every role, in order.
var Roles = []string{RoleForeman, RoleHost, RoleWorker, RoleReader}

const (
	accountsFile = "accounts.conf"
	operatorJWT  = "operator.jwt"
	accountJWT   = "account.jwt"
	systemJWT    = "system.jwt"
	resolverDir  = "jwt"
	sysCreds     = "sys.creds"
	usersFile    = "users"
	keysDir      = "keys"
)

// ClaimsSubject is where a user of the account asks the server for the
// account's JWT as its resolver holds it now (revocations included): the
// system account's lookup, imported into FOREMAN for its own account
// alone. A host reads which workers are revoked there.
const ClaimsSubject = "foreman-account.claims"

// The JetStream limits of the account (foreman nats init): what every
// foreman process of a team may store in all, whatever a credential
// tries (docs/NATS.md).
const (
	AccountDisk      = 8 << 30   // bytes on disk, every stream
	AccountMemory    = 256 << 20 // bytes in memory
	AccountStreams   = 4096      // streams (a build's log and ledger each, a worker's logs)
	AccountConsumers = 16384     // consumers (a worker's own; KV watches)
)

func keyFile(dir, name string) string { return filepath.Join(dir, keysDir, name+".nk") }

// Init makes the operator, the accounts and the roles' signing keys in
// dir, and the server's accounts.conf. A dir made before is kept as it is
// (its users stay valid): Init says so with ErrExists.
func Init(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	dir = abs
	if _, err := os.Stat(filepath.Join(dir, accountsFile)); err == nil {
		return ErrExists
	}
	if err := os.MkdirAll(filepath.Join(dir, keysDir), 0o700); err != nil {
		return err
	}
	op, err := nkeys.CreateOperator()
	if err != nil {
		return err
	}
	opPub, _ := op.PublicKey()
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return err
	}
	sysPub, _ := sys.PublicKey()
	acc, err := nkeys.CreateAccount()
	if err != nil {
		return err
	}
	accPub, _ := acc.PublicKey()

	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "foreman"
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(op)
	if err != nil {
		return err
	}
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	// The resolver's lookup of an account's JWT, for each account its own
	// (the account's key is the subject's fourth token): FOREMAN imports
	// it, and its hosts read the revocations there.
	sc.Exports.Add(&jwt.Export{Name: "an account's own JWT", Subject: "$SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP",
		Type: jwt.Service, AccountTokenPosition: 4})
	sysJWT, err := sc.Encode(op)
	if err != nil {
		return err
	}
	ac := jwt.NewAccountClaims(accPub)
	ac.Name = Account
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: AccountMemory, DiskStorage: AccountDisk,
		Streams: AccountStreams, Consumer: AccountConsumers}
	ac.Imports.Add(&jwt.Import{Name: "the account's own JWT", Account: sysPub,
		Subject: jwt.Subject(fmt.Sprintf("$SYS.REQ.ACCOUNT.%s.CLAIMS.LOOKUP", accPub)), LocalSubject: ClaimsSubject, Type: jwt.Service})
	// The account's own key signs no user: each role's scoped key does.
	seeds := map[string]nkeys.KeyPair{"operator": op, "system": sys, "account": acc}
	for _, role := range Roles {
		kp, err := nkeys.CreateAccount()
		if err != nil {
			return err
		}
		pub, _ := kp.PublicKey()
		scope := jwt.NewUserScope()
		scope.Key, scope.Role = pub, role
		scope.Description = "foreman's " + role + " users: " + about[role]
		scope.Template.Permissions = Permissions(role)
		ac.SigningKeys.AddScopedSigner(scope)
		seeds[role] = kp
	}
	accJWT, err := ac.Encode(op)
	if err != nil {
		return err
	}
	for name, kp := range seeds {
		seed, err := kp.Seed()
		if err != nil {
			return err
		}
		if err := os.WriteFile(keyFile(dir, name), append(seed, '\n'), 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, operatorJWT), []byte(opJWT+"\n"), 0o644); err != nil {
		return err
	}
	// A user of the system account: what pushes the account's JWT to a
	// running server (foreman nats revoke).
	su, err := nkeys.CreateUser()
	if err != nil {
		return err
	}
	suPub, _ := su.PublicKey()
	uc := jwt.NewUserClaims(suPub)
	uc.Name = "foreman-nats-admin"
	uj, err := uc.Encode(sys)
	if err != nil {
		return err
	}
	suSeed, _ := su.Seed()
	creds, err := jwt.FormatUserConfig(uj, suSeed)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, sysCreds), creds, 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, resolverDir), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, systemJWT), []byte(sysJWT+"\n"), 0o644); err != nil {
		return err
	}
	return writeAccount(dir, accJWT)
}

// writeAccount keeps the account's JWT in dir, and the server's
// accounts.conf that preloads it: a server started again starts with the
// revocations made meanwhile (a resolver keeps the newest it was given).
func writeAccount(dir, accJWT string) error {
	data, err := os.ReadFile(filepath.Join(dir, systemJWT))
	if err != nil {
		return err
	}
	sysJWT := strings.TrimSpace(string(data))
	sc, err := jwt.DecodeAccountClaims(sysJWT)
	if err != nil {
		return err
	}
	ac, err := jwt.DecodeAccountClaims(accJWT)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, accountJWT), []byte(accJWT+"\n"), 0o644); err != nil {
		return err
	}
	conf := fmt.Sprintf(`# Made by foreman nats init: the operator foreman's accounts are signed
# by, and the accounts. The resolver is NATS's own (full): it keeps the
# accounts' JWTs in its directory, and takes a newer one from a running
# server's system account, so that foreman nats revoke takes a user out
# with no reload or restart. Users are made by foreman nats creds, and
# need no change here.
operator: %q
system_account: %s
resolver: {
  type: full
  dir: %q
  allow_delete: false
}
resolver_preload: {
  # SYS
  %s: %q
  # %s
  %s: %q
}
`, filepath.Join(dir, operatorJWT), sc.Subject, filepath.Join(dir, resolverDir), sc.Subject, sysJWT, Account, ac.Subject, accJWT)
	tmp := filepath.Join(dir, accountsFile+".tmp")
	if err := os.WriteFile(tmp, []byte(conf), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, accountsFile))
}

// ErrExists is a directory Init made before.
var ErrExists = errors.New("the accounts are made already (accounts.conf is there): users made before stay valid; make new ones with foreman nats creds")

// User says who a user is made for.
type User struct {
	Role string
	Name string // cluster.id of the process: a worker's, its NATS user's name
	// Labels a worker takes jobs of (worker.labels); Confined adds the
	// label of workers that sandbox their checks (host.sandbox on).
	Labels   []string
	Confined bool
	// Builds a host or a foreman leads (build.name): their ledgers (a
	// host's) or logs (foreman's) are the only streams of a build's it
	// may make or purge.
	Builds []string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
var labelRE = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// Creds makes a user of dir's account for u, signed by u.Role's scoped
// key: its .creds file (the JWT and the user's seed) and its public key,
// which a host trusts a worker by (host.workers).
func Creds(dir string, u User) (creds []byte, pub string, err error) {
	if !slices.Contains(Roles, u.Role) {
		return nil, "", fmt.Errorf("role %q is none of foreman, host, worker, reader", u.Role)
	}
	if !nameRE.MatchString(u.Name) {
		return nil, "", fmt.Errorf("name %q: a worker's name is its NATS user's and a token of its subjects: letters, digits and -, at most 64", u.Name)
	}
	signer, err := readSeed(keyFile(dir, u.Role))
	if err != nil {
		return nil, "", err
	}
	acc, err := readSeed(keyFile(dir, "account"))
	if err != nil {
		return nil, "", err
	}
	accPub, _ := acc.PublicKey()
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", err
	}
	pub, _ = user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name, uc.IssuerAccount = u.Name, accPub
	// Its permissions and limits are its role's scope's, and only those:
	// a scoped user carries none of its own.
	uc.UserPermissionLimits = jwt.UserPermissionLimits{}
	if u.Role == RoleHost || u.Role == RoleForeman {
		if len(u.Builds) == 0 {
			return nil, "", fmt.Errorf("a %s's user is made for the builds it leads (build.name): give them", u.Role)
		}
		for _, b := range u.Builds {
			if k := natsname.Key(b); k != strings.ToLower(k) {
				return nil, "", fmt.Errorf("build %q: a %s's NATS user names its builds as tags, which NATS lower-cases: a build of lower-case letters, digits and - only", b, u.Role)
			}
			uc.Tags.Add("build:" + natsname.Key(b))
		}
	}
	if u.Role == RoleWorker {
		sets, err := LabelSets(u.Labels, u.Confined)
		if err != nil {
			return nil, "", err
		}
		for _, s := range sets {
			uc.Tags.Add("set:" + natsname.Key(s))
		}
	}
	uj, err := uc.Encode(signer)
	if err != nil {
		return nil, "", err
	}
	seed, err := user.Seed()
	if err != nil {
		return nil, "", err
	}
	if creds, err = jwt.FormatUserConfig(uj, seed); err != nil {
		return nil, "", err
	}
	// Kept, so that foreman nats revoke finds the user by its name.
	f, err := os.OpenFile(filepath.Join(dir, usersFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, "", err
	}
	_, err = fmt.Fprintf(f, "%s %s %s\n", u.Role, u.Name, pub)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return creds, pub, err
}

// LabelSets are the label sets a worker with labels may take jobs of:
// every set of them (any, each label, each pair...), workq's names.
func LabelSets(labels []string, confined bool) ([]string, error) {
	l := slices.Clone(labels)
	for _, x := range l {
		if !labelRE.MatchString(x) {
			return nil, fmt.Errorf("label %q: lower-case letters, digits and -, at most 32 (NATS tags are lower-case)", x)
		}
	}
	if confined {
		l = append(l, natsname.Sandboxed)
	}
	slices.Sort(l)
	l = slices.Compact(l)
	if len(l) > 8 {
		return nil, fmt.Errorf("%d labels: a worker may have at most 8 (each set of them is a consumer it may pull from)", len(l))
	}
	var out []string
	for mask := 0; mask < 1<<len(l); mask++ {
		var set []string
		for i := range l {
			if mask&(1<<i) != 0 {
				set = append(set, l[i])
			}
		}
		out = append(out, natsname.LabelSet(set))
	}
	return out, nil
}

// Seed reads the seed in a .creds file: what a worker signs with.
func Seed(creds []byte) (nkeys.KeyPair, string, error) {
	kp, err := jwt.ParseDecoratedUserNKey(creds)
	if err != nil {
		return nil, "", err
	}
	uj, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return nil, "", err
	}
	uc, err := jwt.DecodeUserClaims(uj)
	if err != nil {
		return nil, "", err
	}
	return kp, uc.Name, nil
}

func readSeed(path string) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (made by foreman nats init)", err)
	}
	return nkeys.FromSeed([]byte(strings.TrimSpace(string(data))))
}
