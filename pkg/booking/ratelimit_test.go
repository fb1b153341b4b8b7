package booking

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

func rateLimited(t *testing.T, err error) *RateLimitedError {
	t.Helper()
	var rl *RateLimitedError
	if !errors.As(err, &rl) || !errors.Is(err, ErrRateLimited) {
		t.Fatalf("want a *RateLimitedError, got %v", err)
	}
	return rl
}

// TestLimitsInTheJoin: the abuse limits checked inside enqueue.lua — GCRA
// with a burst of the rate, a refused join changes nothing, the retry
// time, two limits that must both allow, per-event keys that expire.
func TestLimitsInTheJoin(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "a", Capacity: 1})
	f.event(EventConfig{ID: "b", Capacity: 1})
	ip := Limit{Subject: "ip:198.51.100.7", Rate: 3, Period: time.Minute}
	user := func(u string) Limit { return Limit{Subject: "u:" + u, Rate: 2, Period: time.Second} }

	// three joins from one address in the same instant: the burst
	for _, u := range []string{"u1", "u2", "u3"} {
		if _, err := f.s.Enqueue(f.ctx, "a", u, ip, user(u)); err != nil {
			t.Fatalf("join %s below the limit: %v", u, err)
		}
	}
	_, err := f.s.Enqueue(f.ctx, "a", "u4", ip, user("u4"))
	rl := rateLimited(t, err)
	// the next join is allowed one interval (60 s / 3) after the first
	if rl.RetryAfter != 20*time.Second || rl.RetryAfterSeconds() != 20 {
		t.Fatalf("retry after %v, want 20s", rl.RetryAfter)
	}
	// refused: not queued, and its user limit was not counted
	if _, err := f.s.Position(f.ctx, "a", "u4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused join queued the user: %v", err)
	}
	if n := f.counts("a").Waiting; n != 2 { // u1 admitted at once, u2 and u3 waiting
		t.Fatalf("waiting %d, want 2", n)
	}
	// the same address on another event has a budget of its own
	if _, err := f.s.Enqueue(f.ctx, "b", "u4", ip); err != nil {
		t.Fatalf("another event's limit: %v", err)
	}
	// another address is not limited
	if _, err := f.s.Enqueue(f.ctx, "a", "u5", Limit{Subject: "ip:198.51.100.8", Rate: 3, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(19 * time.Second)
	if _, err := f.s.Enqueue(f.ctx, "a", "u4", ip); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("19 s later: %v", err)
	}
	f.clock.Advance(time.Second)
	if _, err := f.s.Enqueue(f.ctx, "a", "u4", ip); err != nil {
		t.Fatalf("20 s later: %v", err)
	}

	// the user limit counts joins and position reads together; a repeated
	// join is a request too
	u := user("u2")
	if _, err := f.s.Enqueue(f.ctx, "a", "u2", u); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Position(f.ctx, "a", "u2", u); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Position(f.ctx, "a", "u2", u)
	if rl := rateLimited(t, err); rl.RetryAfter != 500*time.Millisecond || rl.RetryAfterSeconds() != 1 {
		t.Fatalf("retry after %v", rl.RetryAfter)
	}
	// two limits: when one refuses, the other is not counted either
	free := Limit{Subject: "ip:203.0.113.1", Rate: 1, Period: time.Hour}
	if _, err := f.s.Enqueue(f.ctx, "a", "u2", free, u); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("the user's limit must refuse: %v", err)
	}
	if _, err := f.s.Enqueue(f.ctx, "a", "u6", free); err != nil {
		t.Fatalf("the address's only request was counted by a refused call: %v", err)
	}

	// a key expires when its bucket is full again
	key := f.s.Prefix() + ":{a}:rl:u:u2"
	if ttl := f.rdb.PTTL(f.ctx, key).Val(); ttl <= 0 || ttl > time.Second {
		t.Fatalf("the user key's TTL %v, want (0, 1s]", ttl)
	}
	// a limit that is off reads and writes nothing
	if _, err := f.s.Enqueue(f.ctx, "a", "u7", Limit{Subject: "ip:off", Rate: 0, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if n := f.rdb.Exists(f.ctx, f.s.Prefix()+":{a}:rl:ip:off").Val(); n != 0 {
		t.Fatal("a limit that is off made a key")
	}
	// a subject that would break the hash tag is refused before Redis
	if _, err := f.s.Enqueue(f.ctx, "a", "u8", Limit{Subject: "ip:{x}", Rate: 1, Period: time.Second}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("subject with a brace: %v", err)
	}
	// a join of an event that does not exist is not limited (and leaves no key)
	if _, err := f.s.Enqueue(f.ctx, "nope", "u1", ip); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
	if n := f.rdb.Exists(f.ctx, f.s.Prefix()+":{nope}:rl:ip:198.51.100.7").Val(); n != 0 {
		t.Fatal("a join of an unknown event made a limit key")
	}
	f.checkInvariants("a")
}

// TestCheckLimits: the routes whose scripts do not check limits
// themselves count against the same keys as join and position.
func TestCheckLimits(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "a"})
	u := Limit{Subject: "u:x", Rate: 2, Period: time.Second}
	if _, err := f.s.Position(f.ctx, "a", "x", u); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if err := f.s.CheckLimits(f.ctx, "a", u); err != nil {
		t.Fatal(err)
	}
	if err := f.s.CheckLimits(f.ctx, "a", u); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("third request of 2/s: %v", err)
	}
	f.clock.Advance(500 * time.Millisecond)
	if err := f.s.CheckLimits(f.ctx, "a", u); err != nil {
		t.Fatalf("one interval later: %v", err)
	}
	if err := f.s.CheckLimits(f.ctx, "nope", u); err != nil {
		t.Fatalf("unknown event: %v", err)
	}
	if err := f.s.CheckLimits(f.ctx, "a"); err != nil {
		t.Fatalf("no limits: %v", err)
	}
	if err := f.s.CheckLimits(f.ctx, "bad id!", u); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad event id: %v", err)
	}
}

// TestLimitsSustainedRate: over a long run at twice the allowed rate,
// exactly the rate (plus the burst) gets through.
func TestLimitsSustainedRate(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "a", Capacity: 1})
	lim := Limit{Subject: "u:p", Rate: 10, Period: time.Second}
	f.join("a", "p")
	ok := 0
	for range 400 { // 20 s at 20 requests a second
		if _, err := f.s.Position(f.ctx, "a", "p", lim); err == nil {
			ok++
		} else if !errors.Is(err, ErrRateLimited) {
			t.Fatal(err)
		}
		f.clock.Advance(50 * time.Millisecond)
	}
	if want := 10*20 + 10; ok < want-1 || ok > want {
		t.Fatalf("%d requests allowed in 20 s of a 10/s limit with a burst of 10, want about %d", ok, want)
	}
}

// TestTheJoinThatPlacesTheUserIsNotCounted: the join that creates a
// user's place in the queue is not counted against the user's own limit
// (it would cost every arriving user a new key; docs/booking-engine.md,
// "Abuse limits inside the scripts"), so no key is written for it. Every
// other request of theirs is: a repeated join, a read, and a join that
// placed nobody (refused, or of a user with a key already).
func TestTheJoinThatPlacesTheUserIsNotCounted(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "a", Capacity: 1})
	own := func(u string) Limit { return Limit{Subject: UserSubject(u), Rate: 2, Period: time.Second} }
	key := func(u string) string { return f.s.Prefix() + ":{a}:rl:" + UserSubject(u) }

	// a new user's join: placed (admitted at once here), no key
	if res, err := f.s.Enqueue(f.ctx, "a", "u1", own("u1")); err != nil || !res.Created {
		t.Fatalf("join: %+v %v", res, err)
	}
	if n := f.rdb.Exists(f.ctx, key("u1")).Val(); n != 0 {
		t.Fatal("the join that placed the user wrote its limit key")
	}
	// and the waiting one's too; its next two requests are its burst
	if res, err := f.s.Enqueue(f.ctx, "a", "u2", own("u2")); err != nil || !res.Created || res.State != StateWaiting {
		t.Fatalf("join: %+v %v", res, err)
	}
	if _, err := f.s.Enqueue(f.ctx, "a", "u2", own("u2")); err != nil { // a repeated join counts
		t.Fatal(err)
	}
	if _, err := f.s.Position(f.ctx, "a", "u2", own("u2")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Position(f.ctx, "a", "u2", own("u2")); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("third counted request of 2/s: %v", err)
	}
	// another user's limit is not the joining user's own: counted
	other := Limit{Subject: UserSubject("someone-else"), Rate: 2, Period: time.Second}
	if _, err := f.s.Enqueue(f.ctx, "a", "u3", other); err != nil {
		t.Fatal(err)
	}
	if n := f.rdb.Exists(f.ctx, key("someone-else")).Val(); n != 1 {
		t.Fatal("a limit that is not the joining user's own was not counted")
	}
	// a user who read before joining has a key: the join counts
	if _, err := f.s.Position(f.ctx, "a", "u4", own("u4")); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := f.s.Enqueue(f.ctx, "a", "u4", own("u4")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Position(f.ctx, "a", "u4", own("u4")); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("read, join, read at 2/s: %v", err)
	}
	// a join that placed nobody counts: a new user refused before the sale
	f.event(EventConfig{ID: "later", SalesStart: f.clock.Now().Add(time.Hour)})
	for i := range 2 {
		if _, err := f.s.Enqueue(f.ctx, "later", "u5", own("u5")); !errors.Is(err, ErrSalesNotStarted) {
			t.Fatalf("join %d before the sale: %v", i, err)
		}
	}
	if _, err := f.s.Enqueue(f.ctx, "later", "u5", own("u5")); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("third refused join of 2/s: %v", err)
	}
	f.checkInvariants("a")
}

// TestLimitArgsPerRate: each limit gets its own interval and burst, from
// the cache of formatted pairs too, however many settings it has seen;
// the user's own limit is numbered among the limits that are on.
func TestLimitArgsPerRate(t *testing.T) {
	s := &Store{prefix: "p"} // no Redis: the arguments only
	for round := range 2 {
		for rate := 1; rate <= 100; rate++ {
			want := strconv.FormatFloat(1000/float64(rate), 'f', -1, 64)
			keys, args, err := s.limitArgs("e", []Limit{{}, {Subject: "ip:1.2.3.4", Rate: rate, Period: time.Second}}, "head")
			if err != nil || len(keys) != 1 || keys[0] != "p:{e}:rl:ip:1.2.3.4" || len(args) != 3 ||
				args[0] != "head" || args[1] != want || args[2] != rate {
				t.Fatalf("round %d rate %d: %v %v %v, want interval %s", round, rate, keys, args, err, want)
			}
		}
	}
	limits := []Limit{{Subject: UserSubject("x"), Rate: 0, Period: time.Second}, {Subject: "ip:1.2.3.4", Rate: 5, Period: time.Minute},
		{Subject: UserSubject("alice"), Rate: 5, Period: time.Second}}
	if got := ownLimit(limits, "alice"); got != 2 {
		t.Errorf("own limit of alice %d, want 2 (the second that is on)", got)
	}
	if got := ownLimit(limits, "x"); got != 0 {
		t.Errorf("own limit of x %d, want 0 (off)", got)
	}
	if _, _, err := s.limitArgs("e", []Limit{{Subject: "u:{x}", Rate: 1, Period: time.Second}}); err == nil {
		t.Error("a subject with a hash tag was accepted")
	}
}
