package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
)

// NewSignUp is a human account to open with an email sign-in
// (accounts.Service.SignUp builds it).
type NewSignUp struct {
	AccountID string
	Name      string
	LoginID   string
	// Login is the email sign-in; its AccountID is ignored.
	Login NewLogin
	// Verified marks the email verified at once (an operator vouching for
	// it) and grants FreeCredit in the same transaction; otherwise the
	// credit waits for VerifyLogin.
	Verified   bool
	FreeCredit money.Micros
	// Welcome is mailed when the account is opened (nil: nothing).
	Welcome *Mail
	// Existing builds what is mailed instead when the email already signs
	// in somewhere (the owner of the address is told, the caller is not);
	// verified says whether that login's email is verified. Nil: nothing.
	Existing func(l Login, verified bool) *Mail
}

// SignUpResult is what SignUp did. With Existing the email was in use:
// nothing was opened, Login is the existing login (never to be shown to
// the caller), and only the message to its owner was written.
type SignUpResult struct {
	Account  Account
	Login    Login
	Existing bool
	// MailIDs are the outbox messages written, to be delivered.
	MailIDs []string
}

// SignUp opens the account, its login and its welcome message in one
// transaction, or, when the email already has a login, writes only the
// message Existing builds for that login's owner. Either way a message is
// written in the same transaction as what it tells.
func (s *Store) SignUp(ctx context.Context, n NewSignUp) (SignUpResult, error) {
	var res SignUpResult
	// A concurrent sign-up with the same email can win between the look-up
	// and the insert: the second try sees its login.
	for try := 0; ; try++ {
		res = SignUpResult{}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var verifiedAt *time.Time
			l, err := scanLogin(tx.QueryRow(ctx, `SELECT `+loginCols+`, email_verified_at FROM logins WHERE email = $1`, n.Login.Email), &verifiedAt)
			if err == nil {
				res.Existing, res.Login = true, l
				if n.Existing != nil {
					if m := n.Existing(l, verifiedAt != nil); m != nil {
						if err := insertMail(ctx, tx, *m); err != nil {
							return err
						}
						res.MailIDs = append(res.MailIDs, m.ID)
					}
				}
				return nil
			}
			if !errors.Is(err, ErrNotFound) {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, kind, name) VALUES ($1, 'human', $2)`, n.AccountID, n.Name); err != nil {
				return err
			}
			var verified *time.Time
			if n.Verified {
				now := time.Now()
				verified = &now
			}
			res.Login, err = scanLogin(tx.QueryRow(ctx, `
				INSERT INTO logins (id, account_id, email, password_hash, permissions, email_verified_at)
				VALUES ($1, $2, $3, $4, $5, $6)
				RETURNING `+loginCols, n.LoginID, n.AccountID, n.Login.Email, n.Login.PasswordHash, n.Login.Permissions, verified))
			if isUniqueViolation(err) {
				return ErrEmailTaken
			}
			if err != nil {
				return err
			}
			if n.Verified && n.FreeCredit > 0 {
				if _, err := grantTx(ctx, tx, n.AccountID, EntryFreeGrant, n.FreeCredit, FreeCreditKey(n.AccountID), "new account"); err != nil {
					return err
				}
			}
			if n.Welcome != nil {
				if err := insertMail(ctx, tx, *n.Welcome); err != nil {
					return err
				}
				res.MailIDs = append(res.MailIDs, n.Welcome.ID)
			}
			res.Account, err = scanAccount(tx.QueryRow(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, n.AccountID))
			return err
		})
		if errors.Is(err, ErrEmailTaken) && try == 0 {
			continue
		}
		return res, err
	}
}

// FreeCreditKey is the ledger key of an account's free credit: one entry
// per account, ever.
func FreeCreditKey(account string) string { return "free-credit/" + account }

// VerifyLogin marks the login's email verified, if the login still signs
// in with email (a link for an address since changed verifies nothing),
// and grants its account freeCredit once (FreeCreditKey): verifying again
// answers the first grant with Duplicate set. An unknown login or another
// email is ErrNotFound.
func (s *Store) VerifyLogin(ctx context.Context, loginID, email string, freeCredit money.Micros) (Login, GrantResult, error) {
	var l Login
	var g GrantResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		l, err = scanLogin(tx.QueryRow(ctx, `
			UPDATE logins SET email_verified_at = coalesce(email_verified_at, now())
			WHERE id = $1 AND email = $2
			RETURNING `+loginCols, loginID, email))
		if err != nil {
			return err
		}
		if freeCredit > 0 {
			g, err = grantTx(ctx, tx, l.AccountID, EntryFreeGrant, freeCredit, FreeCreditKey(l.AccountID), "new account")
		}
		return err
	})
	return l, g, err
}

// LoginByID finds a login and whether its email is verified.
func (s *Store) LoginByID(ctx context.Context, id string) (Login, bool, error) {
	var verifiedAt *time.Time
	l, err := scanLogin(s.pool.QueryRow(ctx, `SELECT `+loginCols+`, email_verified_at FROM logins WHERE id = $1`, id), &verifiedAt)
	return l, verifiedAt != nil, err
}
