package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

var (
	// ErrSVMInsufficientFunds: the source cannot cover the transfer.
	ErrSVMInsufficientFunds = errors.New("insufficient funds")
	// ErrSVMDuplicate: a transfer with this signature was settled before.
	ErrSVMDuplicate = errors.New("transaction already settled")
)

// SVMMint credits amount of mint to owner on the local Solana ledger.
func (s *Store) SVMMint(ctx context.Context, mint, owner string, amount uint64) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO svm_balances (mint, owner, amount) VALUES ($1, $2, $3)
		ON CONFLICT (mint, owner) DO UPDATE SET amount = svm_balances.amount + EXCLUDED.amount`, mint, owner, int64(amount))
	return err
}

// SVMBalance reads owner's balance of mint (0 when it has no account).
func (s *Store) SVMBalance(ctx context.Context, mint, owner string) (uint64, error) {
	var amount int64
	err := s.pool.QueryRow(ctx, `SELECT amount FROM svm_balances WHERE mint = $1 AND owner = $2`, mint, owner).Scan(&amount)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return uint64(amount), err
}

// SVMTransfer moves amount from one owner to another once per transaction
// signature, atomically.
func (s *Store) SVMTransfer(ctx context.Context, signature, mint, from, to string, amount uint64) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO svm_transfers (signature, mint, from_owner, to_owner, amount) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			signature, mint, from, to, int64(amount))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrSVMDuplicate
		}
		tag, err = tx.Exec(ctx, `UPDATE svm_balances SET amount = amount - $3 WHERE mint = $1 AND owner = $2 AND amount >= $3`, mint, from, int64(amount))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrSVMInsufficientFunds
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO svm_balances (mint, owner, amount) VALUES ($1, $2, $3)
			ON CONFLICT (mint, owner) DO UPDATE SET amount = svm_balances.amount + EXCLUDED.amount`, mint, to, int64(amount))
		return err
	})
}

// SVMSettled reports whether a transfer with this signature was settled.
func (s *Store) SVMSettled(ctx context.Context, signature string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM svm_transfers WHERE signature = $1)`, signature).Scan(&ok)
	return ok, err
}
