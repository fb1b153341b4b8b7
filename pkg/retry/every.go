package retry

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Every runs sweep every interval until ctx ends, the loop behind each
// background sweep that finishes what a request left undone (unpublished
// facts, unfinished cancellations): a sweep's error is logged and the
// work is tried again at the next tick. what names the work in the logs
// ("seat mark facts"); sweep returns how many items it finished.
func Every(ctx context.Context, interval time.Duration, log *zap.Logger, what string, sweep func(context.Context) (int, error)) error {
	if log == nil {
		log = zap.NewNop()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if n, err := sweep(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn(what+" left unfinished; retried at the next tick", zap.Int("finished", n), zap.Error(err))
		} else if n > 0 {
			log.Info(what+" finished by the sweep", zap.Int("finished", n))
		}
	}
}
