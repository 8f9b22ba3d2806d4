package frontend

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/frontend/pages"
	"conduit/internal/money"
)

// Sign-up's pages (docs/accounts.md, "Sign-up"): the verification link's
// page, and the dev command's mailbox, which shows what would have been
// mailed.

// MailboxPath is the dev mailbox page (Deps.DevTools with mail.sender
// mailbox).
const MailboxPath = "/dev/mailbox"

// verifyEmail: GET /verify-email?login=&email=&token= — the link mailed
// at sign-up. The link is the credential: a valid one verifies the email
// and grants the free credit once; followed again it grants nothing.
func (s *Server) verifyEmail(c *gin.Context) {
	v, err := s.deps.Accounts.VerifyEmail(c.Request.Context(), c.Query("login"), c.Query("email"), c.Query("token"))
	if err != nil {
		failPage(c, "This link does not work", err)
		return
	}
	text := "Your email " + v.Email + " is confirmed."
	if v.Granted > 0 {
		text += " " + money.Micros(v.Granted).String() + " USD of free credit has been added to your account."
	} else {
		text += " It had been confirmed before; your free credit was added then."
	}
	c.Header("Cache-Control", "no-store")
	renderPage(c, http.StatusOK, pages.Message, pages.MessageView{Title: "Email confirmed", Text: text,
		Link: "/dashboard/", LinkText: "Go to the dashboard"})
}

// mailbox: GET /dev/mailbox — every message the outbox holds, newest
// first, with its link.
func (s *Server) mailbox(c *gin.Context) {
	msgs, err := s.deps.Accounts.Mailbox(c.Request.Context())
	if err != nil {
		fail(c, err)
		return
	}
	v := pages.MailboxView{}
	for _, m := range msgs {
		status := "waiting"
		if m.SentAt != nil {
			status = "delivered"
		} else if m.LastError != "" {
			status = "failed: " + m.LastError
		}
		v.Messages = append(v.Messages, pages.MailView{Kind: m.Kind, To: m.To, Subject: m.Subject, Body: m.Body, Link: m.Link,
			At: m.CreatedAt.UTC().Format(time.RFC3339), Status: status})
	}
	c.Header("Cache-Control", "no-store")
	renderPage(c, http.StatusOK, pages.Mailbox, v)
}
