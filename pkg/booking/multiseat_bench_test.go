package booking

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// BenchmarkLockSeats4: select-seat with 4 seats, 50 concurrent
// callers, in the same distribution scripts/bench-select.sh gives
// redis-benchmark running the same script: 10,000 admitted users
// u<12 digits>, 40,000 seats S<12 digits><a|b|c|d>; each call is a random
// user selecting S<n1>a, S<n2>b, S<n3>c, S<n4>d with independent random
// n (redis-benchmark's __rand_int__). A call that finds a seat taken is a
// refusal (409), as it is for redis-benchmark; both report the mix.
func BenchmarkLockSeats4(b *testing.B) {
	const users = 10_000
	seats := make([]string, 0, 4*users)
	for _, f := range []string{"a", "b", "c", "d"} {
		for i := range users {
			seats = append(seats, fmt.Sprintf("S%012d%s", i, f))
		}
	}
	s, ctx := benchStore(b, EventConfig{Seats: seats, Capacity: users, MaxSeatsPerOrder: 4})
	for i := range users {
		if _, err := s.Enqueue(ctx, "bench", fmt.Sprintf("u%012d", i)); err != nil {
			b.Fatal(err)
		}
	}
	var refused, held atomic.Int64
	parallel(b, func(int64) {
		want := []string{
			fmt.Sprintf("S%012da", rand.IntN(users)), fmt.Sprintf("S%012db", rand.IntN(users)),
			fmt.Sprintf("S%012dc", rand.IntN(users)), fmt.Sprintf("S%012dd", rand.IntN(users)),
		}
		_, err := s.LockSeats(ctx, "bench", fmt.Sprintf("u%012d", rand.IntN(users)), want)
		switch {
		case errors.Is(err, ErrSeatUnavailable):
			refused.Add(1)
		case err != nil:
			b.Error(err)
		default:
			held.Add(1)
		}
	})
	b.Logf("%d calls: %d held, %d refused", b.N, held.Load(), refused.Load())
}
