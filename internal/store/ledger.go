package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/errs"
	"conduit/internal/money"
	"conduit/internal/telemetry"
)

// Account is a human or wallet account.
type Account struct {
	ID            string
	Kind          string
	Name          string
	Network       string
	WalletAddress string
	Balance       money.Micros
	CreatedAt     time.Time
}

// Entry kinds of the credit ledger.
const (
	EntryFreeGrant = "free_grant"
	EntryTopUp     = "topup"
	EntryPack      = "pack"
	EntryHold      = "hold"
	EntryRelease   = "release"
	EntryCharge    = "charge"
	EntryRefund    = "refund"
	EntryGrant     = "grant"
	// EntryPayment credits a pay-per-call payment to the paying wallet's
	// account; the render it bought holds its price from there.
	EntryPayment = "payment"
)

var (
	// ErrInsufficientCredit: the balance cannot cover the amount.
	ErrInsufficientCredit = errors.New("insufficient credit")
	// ErrIdempotencyConflict: the key was used before for a different
	// movement (other account, kind or amount).
	ErrIdempotencyConflict error = errs.Conflictf("idempotency key already used for a different movement")
	// ErrHoldSettled: the hold was already released (or captured
	// differently) and cannot be settled again this way.
	ErrHoldSettled = errors.New("hold already settled")
	// ErrChargeExceedsHold: a capture larger than what was held.
	ErrChargeExceedsHold = errors.New("charge exceeds the held amount")
)

// NewID returns prefix + "_" + 16 random hex characters.
func NewID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

const accountCols = `id, kind, name, coalesce(network, ''), coalesce(wallet_address, ''), balance_micros, created_at`

func scanAccount(row pgx.Row) (Account, error) {
	var a Account
	err := row.Scan(&a.ID, &a.Kind, &a.Name, &a.Network, &a.WalletAddress, &a.Balance, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, ErrNotFound
	}
	return a, err
}

// EnsureHumanAccount creates the human account id (if missing) with its
// one-time free credit, both in one transaction. Calling it again changes
// nothing.
func (s *Store) EnsureHumanAccount(ctx context.Context, id, name string, freeCredit money.Micros) (Account, error) {
	var acct Account
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, kind, name) VALUES ($1, 'human', $2) ON CONFLICT (id) DO NOTHING`, id, name); err != nil {
			return err
		}
		if freeCredit > 0 {
			if _, err := grantTx(ctx, tx, id, EntryFreeGrant, freeCredit, "free-credit/"+id, "new account"); err != nil {
				return err
			}
		}
		var err error
		acct, err = scanAccount(tx.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, id))
		return err
	})
	return acct, err
}

// WalletAccount returns the account keyed by network + wallet address,
// creating it (empty: see walletAccountTx) on first use.
func (s *Store) WalletAccount(ctx context.Context, network, address string) (Account, error) {
	var acct Account
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		acct, err = walletAccountTx(ctx, tx, network, address)
		return err
	})
	return acct, err
}

// FindWalletAccount reads the wallet's account without creating it.
func (s *Store) FindWalletAccount(ctx context.Context, network, address string) (Account, error) {
	return scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE kind = 'wallet' AND network = $1 AND wallet_address = $2`, network, address))
}

// walletAccountTx opens a wallet's account with nothing in it: free credit
// is for human accounts, and a wallet's balance holds only what it paid (a
// throwaway wallet must not be a source of free renders).
func walletAccountTx(ctx context.Context, tx pgx.Tx, network, address string) (Account, error) {
	id := NewID("acct")
	var got string
	err := tx.QueryRow(ctx, `
		INSERT INTO accounts (id, kind, network, wallet_address) VALUES ($1, 'wallet', $2, $3)
		ON CONFLICT (network, wallet_address) WHERE kind = 'wallet' DO UPDATE SET network = EXCLUDED.network
		RETURNING id`, id, network, address).Scan(&got)
	if err != nil {
		return Account{}, err
	}
	return scanAccount(tx.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, got))
}

// Account reads one account.
func (s *Store) Account(ctx context.Context, id string) (Account, error) {
	return scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, id))
}

// Balance is the account's spendable credit.
func (s *Store) Balance(ctx context.Context, account string) (money.Micros, error) {
	var b money.Micros
	err := s.pool.QueryRow(ctx, `SELECT balance_micros FROM accounts WHERE id = $1`, account).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	return b, err
}

// LedgerSum adds up the account's entries; it always equals Balance.
func (s *Store) LedgerSum(ctx context.Context, account string) (money.Micros, error) {
	var sum money.Micros
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(amount_micros), 0)::bigint FROM ledger_entries WHERE account_id = $1`, account).Scan(&sum)
	return sum, err
}

// GrantResult is the outcome of a credit grant.
type GrantResult struct {
	EntryID   int64
	Balance   money.Micros
	Duplicate bool
}

// Grant credits amount to the account once per idempotency key: the same
// key again returns the first result with Duplicate set; the same key for a
// different movement is ErrIdempotencyConflict.
func (s *Store) Grant(ctx context.Context, account, kind string, amount money.Micros, key, reference string) (GrantResult, error) {
	if amount <= 0 {
		return GrantResult{}, fmt.Errorf("grant amount must be positive, got %s", amount)
	}
	var res GrantResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		res, err = grantTx(ctx, tx, account, kind, amount, key, reference)
		return err
	})
	return res, err
}

func grantTx(ctx context.Context, tx pgx.Tx, account, kind string, amount money.Micros, key, reference string) (GrantResult, error) {
	id, dup, err := insertEntry(ctx, tx, account, kind, amount, key, "", reference)
	if err != nil {
		return GrantResult{}, err
	}
	var bal money.Micros
	if dup {
		err = tx.QueryRow(ctx, `SELECT balance_micros FROM accounts WHERE id = $1`, account).Scan(&bal)
	} else {
		err = tx.QueryRow(ctx, `UPDATE accounts SET balance_micros = balance_micros + $2 WHERE id = $1 RETURNING balance_micros`, account, amount).Scan(&bal)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return GrantResult{}, ErrNotFound
	}
	return GrantResult{EntryID: id, Balance: bal, Duplicate: dup}, err
}

// insertEntry writes one ledger row unless its key exists; an existing row
// must describe the same movement.
func insertEntry(ctx context.Context, tx pgx.Tx, account, kind string, amount money.Micros, key, holdID, reference string) (id int64, duplicate bool, err error) {
	err = tx.QueryRow(ctx, `
		INSERT INTO ledger_entries (account_id, kind, amount_micros, idempotency_key, hold_id, reference)
		VALUES ($1, $2, $3, $4, nullif($5, ''), $6)
		ON CONFLICT (idempotency_key) DO NOTHING
		RETURNING id`, account, kind, amount, key, holdID, reference).Scan(&id)
	if err == nil {
		return id, false, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		if isForeignKeyViolation(err) {
			return 0, false, ErrNotFound
		}
		return 0, false, err
	}
	var gotAccount, gotKind string
	var gotAmount money.Micros
	if err := tx.QueryRow(ctx, `SELECT id, account_id, kind, amount_micros FROM ledger_entries WHERE idempotency_key = $1`, key).
		Scan(&id, &gotAccount, &gotKind, &gotAmount); err != nil {
		return 0, false, err
	}
	if gotAccount != account || gotKind != kind || gotAmount != amount {
		return 0, false, ErrIdempotencyConflict
	}
	return id, true, nil
}

// Hold reserves amount of the account's credit under an idempotency key and
// returns the hold id; the same key again returns the same hold. The
// balance shown to the owner excludes held credit.
func (s *Store) Hold(ctx context.Context, account string, amount money.Micros, key string) (string, error) {
	var holdID string
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		holdID, err = holdTx(ctx, tx, account, amount, key)
		return err
	})
	return holdID, err
}

func holdTx(ctx context.Context, tx pgx.Tx, account string, amount money.Micros, key string) (string, error) {
	if amount <= 0 {
		return "", fmt.Errorf("hold amount must be positive, got %s", amount)
	}
	var holdID, existingAccount string
	var existingAmount money.Micros
	err := tx.QueryRow(ctx, `SELECT id, account_id, amount_micros FROM holds WHERE idempotency_key = $1`, key).Scan(&holdID, &existingAccount, &existingAmount)
	if err == nil {
		if existingAccount != account || existingAmount != amount {
			return "", ErrIdempotencyConflict
		}
		return holdID, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	var bal money.Micros
	err = tx.QueryRow(ctx, `UPDATE accounts SET balance_micros = balance_micros - $2 WHERE id = $1 AND balance_micros >= $2 RETURNING balance_micros`, account, amount).Scan(&bal)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := accountExists(ctx, tx, account); err != nil {
			return "", err
		}
		return "", ErrInsufficientCredit
	}
	if err != nil {
		return "", err
	}
	holdID = NewID("hold")
	if _, err := tx.Exec(ctx, `INSERT INTO holds (id, account_id, amount_micros, status, idempotency_key) VALUES ($1, $2, $3, 'held', $4)`, holdID, account, amount, key); err != nil {
		return "", err
	}
	if _, _, err = insertEntry(ctx, tx, account, EntryHold, -amount, "hold/"+holdID, holdID, key); err != nil {
		return "", err
	}
	afterCommit(ctx, func() { telemetry.CreditHeld(int64(amount)) })
	return holdID, nil
}

func accountExists(ctx context.Context, tx pgx.Tx, account string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM accounts WHERE id = $1`, account).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// Capture settles a hold by charging charge (≤ the held amount) and
// releasing the rest. also runs in the same transaction, so the charge and
// the record it pays for commit together. Capturing again with the same
// charge is a no-op; a released hold cannot be captured.
func (s *Store) Capture(ctx context.Context, holdID string, charge money.Micros, also func(pgx.Tx) error) error {
	return s.settle(ctx, holdID, "captured", charge, also)
}

// Release returns the whole hold to the balance; nothing is charged.
// Releasing again is a no-op; a captured hold cannot be released.
func (s *Store) Release(ctx context.Context, holdID string, also func(pgx.Tx) error) error {
	return s.settle(ctx, holdID, "released", 0, also)
}

func (s *Store) settle(ctx context.Context, holdID, to string, charge money.Micros, also func(pgx.Tx) error) error {
	if charge < 0 {
		return fmt.Errorf("charge must not be negative, got %s", charge)
	}
	return s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return settleTx(ctx, tx, holdID, to, charge, also)
	})
}

// settleTx is settle inside the caller's transaction.
func settleTx(ctx context.Context, tx pgx.Tx, holdID, to string, charge money.Micros, also func(pgx.Tx) error) error {
	if charge < 0 {
		return fmt.Errorf("charge must not be negative, got %s", charge)
	}
	var account, status string
	var amount, charged money.Micros
	err := tx.QueryRow(ctx, `SELECT account_id, status, amount_micros, charged_micros FROM holds WHERE id = $1 FOR UPDATE`, holdID).
		Scan(&account, &status, &amount, &charged)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	if status != "held" {
		if status == to && charged == charge {
			return nil // retried settlement: already done
		}
		return ErrHoldSettled
	}
	if charge > amount {
		return ErrChargeExceedsHold
	}
	if _, _, err := insertEntry(ctx, tx, account, EntryRelease, amount, "hold/"+holdID+"/release", holdID, ""); err != nil {
		return err
	}
	if charge > 0 {
		if _, _, err := insertEntry(ctx, tx, account, EntryCharge, -charge, "hold/"+holdID+"/charge", holdID, ""); err != nil {
			return err
		}
	}
	// The balance and the hold in one statement (one round trip).
	if _, err := tx.Exec(ctx, `
		WITH settled AS (UPDATE holds SET status = $2, charged_micros = $3, settled_at = now() WHERE id = $1)
		UPDATE accounts SET balance_micros = balance_micros + $5 WHERE id = $4`, holdID, to, charge, account, amount-charge); err != nil {
		return err
	}
	if also != nil {
		if err := also(tx); err != nil {
			return err
		}
	}
	afterCommit(ctx, func() { telemetry.CreditSettled(int64(amount), int64(charge)) })
	return nil
}

// HoldStatus reads a hold's state and charged amount.
func (s *Store) HoldStatus(ctx context.Context, holdID string) (status string, charged money.Micros, err error) {
	err = s.pool.QueryRow(ctx, `SELECT status, charged_micros FROM holds WHERE id = $1`, holdID).Scan(&status, &charged)
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrNotFound
	}
	return status, charged, err
}
