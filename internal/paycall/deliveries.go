package paycall

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"conduit/internal/store"
)

// deliveries records that a finished file reached its caller (an answer
// carrying its URL written in full, or a download), which decides whether
// the same request is later answered as alreadyPaid. A file can reach its
// caller while PostgreSQL is down — the blob store is not the database —
// so a mark the database cannot take is kept in memory and retried until
// it can, instead of being lost. Marks still pending when the process
// exits are lost; the cost is that the buyer may be offered the same file
// once more without paying.
type deliveries struct {
	store *store.Store
	log   *slog.Logger

	mu       sync.Mutex
	pending  map[delivery]struct{}
	retrying bool
}

// delivery is one mark: by run (an answer) or by file key (a download).
type delivery struct{ runID, fileKey string }

// maxPendingDeliveries bounds what an outage can keep in memory.
const maxPendingDeliveries = 100_000

// retry bounds: the first retry comes quickly, later ones back off.
const (
	deliveryRetryFirst = 100 * time.Millisecond
	deliveryRetryMax   = 5 * time.Second
)

func (d *deliveries) mark(ctx context.Context, m delivery) error {
	if m.runID != "" {
		return d.store.MarkMediaDelivered(ctx, m.runID)
	}
	return d.store.MarkMediaFileDelivered(ctx, m.fileKey)
}

// record marks the delivery now, or keeps it for retrying when the
// database is unavailable.
func (d *deliveries) record(ctx context.Context, m delivery) {
	err := d.mark(ctx, m)
	switch {
	case err == nil:
		return
	case !store.Unavailable(err):
		d.log.Error("recording a delivery failed", "run", m.runID, "key", m.fileKey, "err", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) >= maxPendingDeliveries {
		d.log.Error("recording a delivery failed and too many are pending to keep it", "run", m.runID, "key", m.fileKey, "err", err)
		return
	}
	if d.pending == nil {
		d.pending = map[delivery]struct{}{}
	}
	d.pending[m] = struct{}{}
	d.log.Warn("the database is unavailable; the delivery is kept and recorded when it is back", "run", m.runID, "key", m.fileKey)
	if !d.retrying {
		d.retrying = true
		go d.retry()
	}
}

// retry records pending marks, backing off while the database stays
// away, and ends when none is left.
func (d *deliveries) retry() {
	wait := deliveryRetryFirst
	for {
		time.Sleep(wait)
		wait = min(2*wait, deliveryRetryMax)
		d.mu.Lock()
		batch := slices.Collect(maps.Keys(d.pending))
		d.mu.Unlock()
		for _, m := range batch {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := d.mark(ctx, m)
			cancel()
			if err != nil && store.Unavailable(err) {
				break // still away: wait and try the whole batch again
			}
			if err != nil {
				d.log.Error("recording a delivery failed", "run", m.runID, "key", m.fileKey, "err", err)
			} else {
				d.log.Info("recorded a delivery kept during a database outage", "run", m.runID, "key", m.fileKey)
			}
			d.mu.Lock()
			delete(d.pending, m)
			d.mu.Unlock()
		}
		d.mu.Lock()
		if len(d.pending) == 0 {
			d.retrying = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}
