package operators

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/redis/go-redis/v9"
)

// SignIn checks name's password for a sign-in from client address ip and
// returns the account. A wrong password, an unknown name and a disabled
// account are all ErrBadCredentials (the hash is checked against a dummy
// for a name that has none, so the answer takes as long). Failures are
// counted in Redis per name and per address (Lockout): past the limits a
// sign-in is a *LockedError without the password being looked at, for
// unknown names as for real ones. A success clears the name's count.
func (s *Store) SignIn(ctx context.Context, name, password string, ip netip.Addr) (Account, error) {
	name = NormalizeName(name)
	if err := s.checkLocks(ctx, name, ip); err != nil {
		return Account{}, err
	}
	if !known(name) {
		// no account has such a name: the same work and answer as a
		// wrong password, counted against the address only
		s.matches(password, s.dummy())
		if _, err := s.failAddress(ctx, ip); err != nil {
			return Account{}, err
		}
		return Account{}, ErrBadCredentials
	}
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM operator_accounts WHERE name = $1`, name))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Account{}, wrap("sign in", err)
	}
	hash := a.hash
	if err != nil {
		hash = s.dummy()
	}
	if ok := s.matches(password, hash); !ok || err != nil || a.Disabled {
		if locked, ferr := s.fail(ctx, name, &ip); ferr != nil {
			return Account{}, ferr
		} else if locked != nil {
			return Account{}, locked
		}
		return Account{}, ErrBadCredentials
	}
	if err := s.rdb.Del(ctx, s.accountKey(name)).Err(); err != nil {
		return Account{}, wrap("sign in", err)
	}
	return a, nil
}

// The sign-in counters: failures of a name, of an address.
func (s *Store) accountKey(name string) string { return s.prefix + ":signin:account:" + name }
func (s *Store) ipKey(ip netip.Addr) string    { return s.prefix + ":signin:ip:" + clientNet(ip) }

// clientNet is the counter's subject: the IPv4 address, or the IPv6 /64
// (one subscriber's network).
func clientNet(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// checkLocks refuses a sign-in whose name or address is locked.
func (s *Store) checkLocks(ctx context.Context, name string, ip netip.Addr) error {
	pipe := s.rdb.Pipeline()
	acct, acctTTL := pipe.Get(ctx, s.accountKey(name)), pipe.PTTL(ctx, s.accountKey(name))
	var addr *redis.StringCmd
	var addrTTL *redis.DurationCmd
	if ip.IsValid() {
		addr, addrTTL = pipe.Get(ctx, s.ipKey(ip)), pipe.PTTL(ctx, s.ipKey(ip))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return wrap("sign-in limits", err)
	}
	if n, _ := acct.Int(); n >= s.lockout.Attempts {
		return &LockedError{Scope: "account", RetryAfter: ttlOr(acctTTL.Val(), s.lockout.Window)}
	}
	if addr != nil {
		if n, _ := addr.Int(); n >= s.lockout.PerIP {
			return &LockedError{Scope: "ip", RetryAfter: ttlOr(addrTTL.Val(), s.lockout.Window)}
		}
	}
	return nil
}

func ttlOr(ttl, def time.Duration) time.Duration {
	if ttl <= 0 {
		return def
	}
	return ttl
}

// fail counts a failed sign-in of name (and of ip, when given). It
// returns a *LockedError when this failure locked the name.
func (s *Store) fail(ctx context.Context, name string, ip *netip.Addr) (*LockedError, error) {
	w := s.lockout.Window
	pipe := s.rdb.TxPipeline()
	n := pipe.Incr(ctx, s.accountKey(name))
	pipe.ExpireNX(ctx, s.accountKey(name), w)
	if ip != nil && ip.IsValid() {
		pipe.Incr(ctx, s.ipKey(*ip))
		pipe.ExpireNX(ctx, s.ipKey(*ip), w)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("count failed sign-in", err)
	}
	if n.Val() < int64(s.lockout.Attempts) {
		return nil, nil
	}
	// locked for a whole window from the failure that locked it
	if err := s.rdb.PExpire(ctx, s.accountKey(name), w).Err(); err != nil {
		return nil, wrap("lock account", err)
	}
	return &LockedError{Scope: "account", RetryAfter: w}, nil
}

// failAddress counts a failed sign-in of ip alone.
func (s *Store) failAddress(ctx context.Context, ip netip.Addr) (bool, error) {
	if !ip.IsValid() {
		return false, nil
	}
	pipe := s.rdb.TxPipeline()
	pipe.Incr(ctx, s.ipKey(ip))
	pipe.ExpireNX(ctx, s.ipKey(ip), s.lockout.Window)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, wrap("count failed sign-in", err)
	}
	return true, nil
}

// lockState fills a.LockedUntil from the name's counter (best effort: a
// Redis error leaves it unset).
func (s *Store) lockState(ctx context.Context, a *Account) {
	pipe := s.rdb.Pipeline()
	n, ttl := pipe.Get(ctx, s.accountKey(a.Name)), pipe.PTTL(ctx, s.accountKey(a.Name))
	if _, err := pipe.Exec(ctx); err != nil {
		return
	}
	if c, _ := n.Int(); c >= s.lockout.Attempts && ttl.Val() > 0 {
		t := s.now().Add(ttl.Val()).UTC()
		a.LockedUntil = &t
	}
}
