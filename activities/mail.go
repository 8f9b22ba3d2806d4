package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"

	"conduit/internal/mail"
	"conduit/internal/store"
)

// Mail delivers the outbox's messages with the configured sender.
type Mail struct {
	Store  *store.Store
	Sender mail.Sender
}

// MailInput names one outbox message.
type MailInput struct {
	MailID string
}

// Send delivers the message once: one already sent is left alone, a
// message gone from the outbox or refused for good (a 5xx) fails without
// retrying, and every failed attempt is recorded on the message.
func (a *Mail) Send(ctx context.Context, in MailInput) error {
	m, err := a.Store.MailByID(ctx, in.MailID)
	if errors.Is(err, store.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError("no outbox message "+in.MailID, ErrPermanent, err)
	}
	if err != nil {
		return err
	}
	if m.SentAt != nil {
		return nil
	}
	if a.Sender == nil {
		// No sender on this worker (mail.sender empty): retried until
		// one is configured or the policy gives up.
		err := errors.New("no mail sender is configured (mail.sender)")
		_ = a.Store.MailFailed(ctx, m.ID, err.Error())
		return err
	}
	if err := a.Sender.Send(ctx, mail.Message{ID: m.ID, To: m.To, Subject: m.Subject, Body: m.Body}); err != nil {
		_ = a.Store.MailFailed(ctx, m.ID, err.Error())
		if errors.Is(err, mail.ErrPermanent) {
			return temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, err)
		}
		return err
	}
	return a.Store.MarkMailSent(ctx, m.ID)
}
