package remote

import (
	"context"
	"fmt"

	"github.com/nats-io/jwt/v2"

	"github.com/agentforeman/foreman/internal/natsauth"
)

// Trust and revocation: a worker counts only if host.workers lists it
// (when set), and, when the server holds the account's JWT (operator
// mode, docs/nats/foreman.conf), its user JWT was made by the account's
// worker signing key and the account has not revoked it. The host reads
// the account's JWT every lease and again before it takes a result, so
// that foreman nats revoke stops a worker's results at once.

// readClaims reads the account's JWT from the server and vets the workers
// again; false when it could not (NATS did not answer: what was read
// before stands).
func (r *Remote) readClaims(ctx context.Context) (*jwt.AccountClaims, bool) {
	if r.o.Claims == nil {
		return nil, true
	}
	ac, err := r.o.Claims(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Debug().Err(err).Msg("cannot read the account's JWT now")
		}
		return nil, false
	}
	r.mu.Lock()
	changed := (ac == nil) != (r.claims == nil) || (ac != nil && ac.ID != r.claims.ID)
	r.claims = ac
	r.mu.Unlock()
	if changed {
		r.revet()
	}
	return ac, true
}

// vouch says why worker's word cannot count now ("" when it can): not
// trusted, revoked, not the account's worker. It reads the account's JWT
// afresh: later is true when it could not.
func (r *Remote) vouch(ctx context.Context, worker string) (why string, later bool) {
	if _, ok := r.readClaims(ctx); !ok {
		return "", true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pool[worker]
	if p == nil {
		// It stopped since: judged by what it showed when it was given
		// the job.
		p = r.gaveTo[worker]
	}
	if p == nil {
		return fmt.Sprintf("worker %s was never given a job by this host", worker), false
	}
	_, why = r.vet(worker, p.st.JWT)
	return why, false
}

func jwtSubject(userJWT string) string {
	uc, err := jwt.DecodeUserClaims(userJWT)
	if err != nil {
		return ""
	}
	return uc.Subject
}

func workerSets(ac *jwt.AccountClaims, userJWT, id, key string) ([]string, error) {
	return natsauth.WorkerSets(ac, userJWT, id, key)
}
