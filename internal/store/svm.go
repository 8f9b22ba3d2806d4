package store

import (
	"context"
	"errors"
	"time"

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
// signature, atomically, and keeps the transaction's wire bytes (wire).
func (s *Store) SVMTransfer(ctx context.Context, signature, mint, from, to string, amount uint64, wire []byte) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO svm_transfers (signature, mint, from_owner, to_owner, amount, tx) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
			signature, mint, from, to, int64(amount), wire)
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

// SVMAccount reads owner's balance of mint and whether owner has a token
// account for it (a balance row, even at zero).
func (s *Store) SVMAccount(ctx context.Context, mint, owner string) (uint64, bool, error) {
	var amount int64
	err := s.pool.QueryRow(ctx, `SELECT amount FROM svm_balances WHERE mint = $1 AND owner = $2`, mint, owner).Scan(&amount)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return uint64(amount), err == nil, err
}

// SVMHolders lists the owners with a token account for mint.
func (s *Store) SVMHolders(ctx context.Context, mint string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT owner FROM svm_balances WHERE mint = $1 ORDER BY owner`, mint)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SVMSupply is the total held of mint.
func (s *Store) SVMSupply(ctx context.Context, mint string) (uint64, error) {
	var supply int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(sum(amount), 0)::bigint FROM svm_balances WHERE mint = $1`, mint).Scan(&supply)
	return uint64(supply), err
}

// SVMTransaction is the settled transaction with this signature and when
// it settled; found is false for unknown signatures and for transfers
// settled before transactions were kept.
func (s *Store) SVMTransaction(ctx context.Context, signature string) (wire []byte, at time.Time, found bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT tx, created_at FROM svm_transfers WHERE signature = $1 AND tx IS NOT NULL`, signature).Scan(&wire, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, time.Time{}, false, nil
	}
	return wire, at, err == nil, err
}
