package activities

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
)

// heartbeat records liveness every second until stopped: a long call's
// proof of life, so a dead worker's attempt is retried within its
// heartbeat timeout.
func heartbeat(ctx context.Context) (stop func()) { return heartbeatEvery(ctx, time.Second, nil) }

// heartbeatEvery is the one heartbeat loop: a heartbeat every interval (5 s
// when unset) until stopped. Without details it beats at once as well;
// with details() (a render's resumable provider state) it does not,
// because the SDK sends the first heartbeat at once and holds later ones
// back (throttling): an empty first beat would delay the one that carries
// the provider's job, and a worker lost meanwhile would order it again.
// Stopping twice is harmless.
func heartbeatEvery(ctx context.Context, every time.Duration, details func() any) (stop func()) {
	if every <= 0 {
		every = 5 * time.Second
	}
	beat := func() {
		if details == nil {
			activity.RecordHeartbeat(ctx)
			return
		}
		activity.RecordHeartbeat(ctx, details())
	}
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for first := true; ; first = false {
			if !first || details == nil {
				beat()
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}
