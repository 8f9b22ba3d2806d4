package accounts

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"conduit/internal/errs"
	"conduit/internal/store"
	"conduit/internal/ticket"
)

// Sign-up (docs/accounts.md, "Sign-up"): a new account's free credit is
// granted only once its email is verified, by a signed, expiring link
// mailed to it through the outbox. Whether the email already has an
// account is never told to the caller: its owner is mailed instead.

// VerifyPath is the verification link's page.
const VerifyPath = "/verify-email"

// Mail kinds of the outbox.
const (
	MailVerify        = "verify_email"
	MailSignUpAttempt = "signup_attempt"
)

// verifyKind binds a verification link's signature to its purpose.
const verifyKind = "verify-email"

// Outbox starts the delivery of outbox messages written by a sign-up
// (internal/mail/outbox). Without one, messages wait for the sweep.
type Outbox interface {
	Deliver(ctx context.Context, ids ...string)
}

// NewSignUp is a sign-up whose fields are already checked and whose
// password is hashed (internal/humans does both).
type NewSignUp struct {
	Name         string
	Email        string
	PasswordHash string
	Permissions  []string
	// Verified: an operator vouches for the email (`account create
	// -verified`): no link is mailed and the free credit is granted now.
	Verified bool
}

// SignUpOutcome is what a sign-up did. The caller's answer must not
// depend on Existing.
type SignUpOutcome struct {
	Account store.Account
	Login   store.Login
	// Existing: the email already had a login; nothing was opened and its
	// owner was mailed.
	Existing bool
}

// signUpReady says why sign-ups that need a link cannot be taken.
func (s *Service) signUpReady() error {
	if s.VerifyLinks == nil {
		return errs.Unavailablef("%s", s.signUpOff())
	}
	return nil
}

func (s *Service) signUpOff() string {
	if s.SignUpOff != nil {
		return s.SignUpOff.Error()
	}
	return "sign-up is not configured on this deployment (signup.secret)"
}

// SignUp opens a human account with an email sign-in and mails a
// verification link to the email; the free credit waits for the link. An
// email that already signs in gets a message instead (a fresh link when
// it was never verified, else a notice that someone tried to sign up with
// it), and nothing else happens: the caller cannot tell the two apart.
// The message is written in the same transaction, then its delivery
// starts.
func (s *Service) SignUp(ctx context.Context, n NewSignUp) (SignUpOutcome, error) {
	if !n.Verified {
		if err := s.signUpReady(); err != nil {
			return SignUpOutcome{}, err
		}
	}
	acct, loginID := store.NewID("acct"), store.NewID("login")
	rec := store.NewSignUp{AccountID: acct, Name: n.Name, LoginID: loginID, Verified: n.Verified, FreeCredit: FreeCredit,
		Login: store.NewLogin{Email: n.Email, PasswordHash: n.PasswordHash, Permissions: n.Permissions}}
	if !n.Verified {
		rec.Welcome = s.verifyMail(loginID, n.Email, false)
	}
	rec.Existing = func(l store.Login, verified bool) *store.Mail {
		if !verified && s.VerifyLinks != nil {
			return s.verifyMail(l.ID, l.Email, true)
		}
		return s.attemptMail(l.Email)
	}
	res, err := s.Store.SignUp(ctx, rec)
	if err != nil {
		return SignUpOutcome{}, err
	}
	if s.Outbox != nil && len(res.MailIDs) > 0 {
		s.Outbox.Deliver(ctx, res.MailIDs...)
	}
	return SignUpOutcome{Account: res.Account, Login: res.Login, Existing: res.Existing}, nil
}

// VerifyLink is the link that verifies email for the login: signed
// (HMAC-SHA256, internal/ticket) over the login and the email, and
// expiring; and when it expires.
func (s *Service) VerifyLink(loginID, email string) (string, time.Time) {
	token := s.VerifyLinks.Issue(verifyKind, loginID+"/"+email)
	q := url.Values{"login": {loginID}, "email": {email}, "token": {token}}
	return s.BaseURL + VerifyPath + "?" + q.Encode(), ticket.Expiry(token)
}

func (s *Service) verifyMail(loginID, email string, again bool) *store.Mail {
	link, exp := s.VerifyLink(loginID, email)
	until := exp.Format("2 January 2006 15:04 UTC")
	intro := "Someone (we hope you) signed up for Conduit with this address."
	if again {
		intro = "Someone (we hope you) signed up for Conduit again with this address, which has an account waiting for this confirmation. Its password is the one chosen at the first sign-up."
	}
	body := fmt.Sprintf("%s\n\nOpen this link to confirm your email and receive your %s USD of free credit:\n\n%s\n\nThe link works until %s. "+
		"If you did not sign up, ignore this message: nothing is granted without the link.\n", intro, FreeCredit, link, until)
	return &store.Mail{ID: store.NewID("mail"), Kind: MailVerify, To: email, Subject: "Confirm your email for Conduit", Body: body, Link: link}
}

func (s *Service) attemptMail(email string) *store.Mail {
	signin := s.BaseURL + "/dashboard/signin"
	body := fmt.Sprintf("Someone tried to sign up for Conduit with %s, which already has an account.\n\n"+
		"If it was you, sign in instead:\n\n%s\n\nIf it was not, you can ignore this message: no account was opened and your password is unchanged.\n", email, signin)
	return &store.Mail{ID: store.NewID("mail"), Kind: MailSignUpAttempt, To: email, Subject: "Someone tried to sign up with your address", Body: body, Link: signin}
}

// Verified is what following a verification link did.
type Verified struct {
	Email string
	// Granted is the free credit this link granted: zero when it had been
	// granted before (the link followed again, another login of the
	// account).
	Granted   int64
	AccountID string
}

// VerifyEmail follows a verification link: the signature is checked
// first (a tampered link or one for another login or email is Forbidden,
// an expired one Gone), then the login's email is marked verified and
// the account's free credit granted, once per account ever.
func (s *Service) VerifyEmail(ctx context.Context, loginID, email, token string) (Verified, error) {
	if s.VerifyLinks == nil {
		return Verified{}, errs.Unavailablef("%s", s.signUpOff())
	}
	bad := errs.Forbiddenf("this verification link is not valid: open the link from the message exactly as it was sent")
	if len(loginID) > 100 || len(email) > 254 || len(token) > 200 {
		return Verified{}, bad
	}
	switch err := s.VerifyLinks.Verify(verifyKind, loginID+"/"+email, token); {
	case errors.Is(err, ticket.ErrExpired):
		return Verified{}, errs.New(errs.Gone, "this verification link has expired: sign up again with the same email to get a new one")
	case err != nil:
		return Verified{}, bad
	}
	l, g, err := s.Store.VerifyLogin(ctx, loginID, email, FreeCredit)
	if errors.Is(err, store.ErrNotFound) {
		return Verified{}, bad
	}
	if err != nil {
		return Verified{}, err
	}
	v := Verified{Email: l.Email, AccountID: l.AccountID}
	if !g.Duplicate {
		v.Granted = int64(FreeCredit)
	}
	return v, nil
}

// VerifyTTL is how long links last when no signer is given (tests).
const VerifyTTL = 24 * time.Hour

// NewVerifyLinks makes the verification links' signer from signup.secret
// (a key of its own: derived, so no other signature of the platform can
// pass for a link).
func NewVerifyLinks(secret string, ttl time.Duration) (*ticket.Signer, error) {
	if strings.TrimSpace(secret) == "" {
		return nil, errors.New("signup.secret is empty")
	}
	return ticket.New(append([]byte("verify-email/"), secret...), ttl)
}

// MailboxSize is how many messages the dev mailbox page shows.
const MailboxSize = 100

// Mailbox is the newest outbox messages, newest first: the dev command's
// mailbox page (mail.sender mailbox), never a production route.
func (s *Service) Mailbox(ctx context.Context) ([]store.Mail, error) {
	return s.Store.Mailbox(ctx, MailboxSize)
}
