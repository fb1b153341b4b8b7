package ledger

import (
	"context"
	"time"
)

// sweepGrace is how old an unpublished row must be before a sweep takes
// it (age, or 5 s when unset): a younger one is still its writer's to
// publish.
func sweepGrace(age time.Duration) time.Duration {
	if age <= 0 {
		return 5 * time.Second
	}
	return age
}

// publishAll publishes the rows each call of next answers, oldest first,
// until a page is empty or a publish fails (the row stays unpublished for
// the next sweep); n is how many it published.
func publishAll[T any](ctx context.Context, next func() ([]T, error), publish func(context.Context, T) error) (n int, err error) {
	for {
		todo, err := next()
		if err != nil || len(todo) == 0 {
			return n, err
		}
		for _, x := range todo {
			if err := publish(ctx, x); err != nil {
				return n, err
			}
			n++
		}
	}
}
