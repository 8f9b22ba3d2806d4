package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// InTx and AfterCommit open inTx and afterCommit to the package's external
// tests.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.inTx(ctx, fn)
}

var AfterCommit = afterCommit
