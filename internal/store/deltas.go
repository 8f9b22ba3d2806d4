package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DeltaChannel is the NOTIFY channel that announces new run deltas; the
// payload is the run id.
const DeltaChannel = "run_deltas"

// Delta is one streamed piece of a run's text. Seq orders deltas: attempt
// number × 1,000,000 + position, so a retried model call's tokens sort
// after the failed attempt's.
type Delta struct {
	Seq  int64
	Text string
}

// PublishDeltas stores a stream's next deltas and wakes the readers in one
// statement: one round trip and one transaction however many deltas it
// carries (NOTIFY is delivered on commit). A delta already stored (the
// same seq, from a re-executed call) is kept as it was.
//
// The commit does not wait for the WAL flush (synchronous_commit off for
// this transaction only; a flush costs milliseconds here, on the first
// token's path): deltas are a live copy of text the run's result carries
// durably, and a stream ends with whatever of the answer its deltas did
// not carry, so deltas a database crash loses cost nothing but liveness.
func (s *Store) PublishDeltas(ctx context.Context, runID string, ds []Delta) error {
	if len(ds) == 0 {
		return nil
	}
	seqs, texts := make([]int64, len(ds)), make([]string, len(ds))
	for i, d := range ds {
		seqs[i], texts[i] = d.Seq, d.Text
	}
	_, err := s.pool.Exec(ctx, `WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
		ins AS (INSERT INTO run_deltas (run_id, seq, text) SELECT $1, d.seq, d.text FROM unnest($2::bigint[], $3::text[]) AS d(seq, text)
			ON CONFLICT DO NOTHING)
		SELECT pg_notify($4, $1) FROM async`, runID, seqs, texts, DeltaChannel)
	return err
}

// DeltasAfter reads a run's deltas with seq > after, in order.
func (s *Store) DeltasAfter(ctx context.Context, runID string, after int64) ([]Delta, error) {
	return queryList(ctx, s, func(r pgx.Row) (Delta, error) {
		var d Delta
		err := r.Scan(&d.Seq, &d.Text)
		return d, err
	}, `SELECT seq, text FROM run_deltas WHERE run_id = $1 AND seq > $2 ORDER BY seq`, runID, after)
}

// DeleteDeltas drops a finished stream's rows.
func (s *Store) DeleteDeltas(ctx context.Context, runID string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM run_deltas WHERE run_id = $1`, runID)
	return err
}

// DeltaHub holds one LISTEN connection for the whole process and wakes the
// streams waiting on a run. Subscribers re-read the table when woken, so a
// lost notification only delays them until their next poll.
type DeltaHub struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NewDeltaHub starts listening; it stops when ctx ends.
func (s *Store) NewDeltaHub(ctx context.Context, log *slog.Logger) *DeltaHub {
	h := &DeltaHub{pool: s.pool, log: log, subs: map[string]map[chan struct{}]struct{}{}}
	go h.listen(ctx)
	return h
}

// Subscribe returns a channel that receives a value when the run has new
// deltas, and a function to unsubscribe.
func (h *DeltaHub) Subscribe(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[runID] == nil {
		h.subs[runID] = map[chan struct{}]struct{}{}
	}
	h.subs[runID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[runID], ch)
		if len(h.subs[runID]) == 0 {
			delete(h.subs, runID)
		}
		h.mu.Unlock()
	}
}

func (h *DeltaHub) wake(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[runID] {
		select {
		case ch <- struct{}{}:
		default: // already pending
		}
	}
}

func (h *DeltaHub) wakeAll() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.wake(id)
	}
}

func (h *DeltaHub) listen(ctx context.Context) {
	go h.sweep(ctx)
	for ctx.Err() == nil {
		err := h.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("delta listener lost its connection; reconnecting", "err", err)
		h.wakeAll() // readers re-check the table meanwhile
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (h *DeltaHub) listenOnce(ctx context.Context) error {
	conn, err := h.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+DeltaChannel); err != nil {
		return err
	}
	defer func() {
		// Leave the pooled connection clean.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "UNLISTEN *")
	}()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		h.wake(n.Payload)
	}
}

// sweep removes deltas of streams nobody finished reading (a client that
// hung up) once they are an hour old.
func (h *DeltaHub) sweep(ctx context.Context) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := h.pool.Exec(ctx, `DELETE FROM run_deltas WHERE created_at < now() - interval '1 hour'`); err != nil && ctx.Err() == nil {
				h.log.Warn("sweeping old run deltas", "err", err)
			}
		}
	}
}
