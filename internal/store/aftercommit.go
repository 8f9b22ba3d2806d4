package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// commitHooks are what one transaction does once it has committed: the
// metrics of the credit it moved, which a transaction that rolls back
// never moved.
type commitHooks struct{ fns []func() }

type commitHooksKey struct{}

// inTx runs fn in a transaction, then, once it has committed, the hooks
// fn's steps left with afterCommit. fn's context carries the hooks.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	h := &commitHooks{}
	ctx = context.WithValue(ctx, commitHooksKey{}, h)
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(ctx, tx) }); err != nil {
		return err
	}
	for _, f := range h.fns {
		f()
	}
	return nil
}

// afterCommit runs f once the transaction of ctx (inTx) has committed;
// outside one, at once.
func afterCommit(ctx context.Context, f func()) {
	if h, ok := ctx.Value(commitHooksKey{}).(*commitHooks); ok {
		h.fns = append(h.fns, f)
		return
	}
	f()
}
