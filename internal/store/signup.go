package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
)

// OpenHumanWithLogin opens the human account id with its one-time free
// credit and gives it the email sign-in n, all in one transaction: an
// email already in use (ErrEmailTaken) leaves no account behind.
// n.AccountID is ignored (the new account's id is used).
func (s *Store) OpenHumanWithLogin(ctx context.Context, id, name string, freeCredit money.Micros, n NewLogin) (Account, Login, error) {
	var acct Account
	var l Login
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, kind, name) VALUES ($1, 'human', $2)`, id, name); err != nil {
			return err
		}
		if freeCredit > 0 {
			if _, err := grantTx(ctx, tx, id, EntryFreeGrant, freeCredit, "free-credit/"+id, "new account"); err != nil {
				return err
			}
		}
		var err error
		l, err = scanLogin(tx.QueryRow(ctx, `
			INSERT INTO logins (id, account_id, email, password_hash, permissions)
			VALUES ($1, $2, $3, $4, $5)
			RETURNING `+loginCols, NewID("login"), id, n.Email, n.PasswordHash, n.Permissions))
		if isUniqueViolation(err) {
			return ErrEmailTaken
		}
		if err != nil {
			return err
		}
		acct, err = scanAccount(tx.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, id))
		return err
	})
	return acct, l, err
}
