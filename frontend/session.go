package frontend

import (
	"errors"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/ulule/limiter/v3"

	"conduit/internal/errs"
	"conduit/internal/humans"
	"conduit/internal/logging"
)

// The dashboard's session API (docs/accounts.md, "Dashboard sessions"):
// the single-page dashboard signs a human in with JSON and then calls the
// public API with the session cookie instead of a bearer key. The rules
// (password hashing, sessions, CSRF tokens, the one sign-up path) are
// internal/humans'; the cookie is the sign-in pages' (signin.go).
const (
	SessionPath = "/api/session"
	SignUpPath  = "/api/signup"
	// CSRFHeader carries the session's CSRF token on every state-changing
	// request authenticated by the session cookie.
	CSRFHeader = "X-CSRF-Token"
)

const sessionKey = "conduit.session"

// sessionView is what GET /api/session answers.
type sessionView struct {
	AccountID string    `json:"accountId"`
	CSRFToken string    `json:"csrfToken"`
	Email     string    `json:"email"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func viewOf(h humans.Human, session string) sessionView {
	return sessionView{Email: h.Login.Email, AccountID: h.Login.AccountID, CSRFToken: humans.CSRFToken(session), ExpiresAt: h.Expires.UTC()}
}

type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// getSession: GET /api/session → who is signed in, 401 when nobody.
func (s *Server) getSession(c *gin.Context) {
	h, session, err := s.signedIn(c)
	if errors.Is(err, humans.ErrNoSession) {
		fail(c, errs.Unauthorizedf("not signed in"))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, viewOf(h, session))
}

// jsonFromThisSite refuses a sign-in or sign-up that a page of another
// site could have sent: it must be JSON (a cross-site form cannot send
// that without a preflight this API never grants) and same-origin by the
// browser's Sec-Fetch-Site / Origin.
func (s *Server) jsonFromThisSite(c *gin.Context) bool {
	mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if mt != "application/json" {
		fail(c, errs.New(errs.Unsupported, "send the body as JSON (Content-Type: application/json)"))
		return false
	}
	if err := s.crossOrigin.Check(c.Request); err != nil {
		fail(c, errs.Forbiddenf("cross-origin request refused"))
		return false
	}
	return true
}

// createSession: POST /api/session {email, password} → the session
// cookie and the session. 401 for a wrong email or password, 429 beyond
// the sign-in limit (per address and per email, as /signin).
func (s *Server) createSession(c *gin.Context) {
	if !s.jsonFromThisSite(c) {
		return
	}
	var body credentials
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if !s.apiSignInAllowed(c, "addr/"+addressKey(c)) || !s.apiSignInAllowed(c, "email/"+strings.ToLower(strings.TrimSpace(body.Email))) {
		return
	}
	token, h, err := s.deps.Humans.SignIn(c.Request.Context(), body.Email, body.Password)
	if errors.Is(err, humans.ErrBadCredentials) {
		logging.From(c.Request.Context()).Info("sign-in refused")
		fail(c, errs.Unauthorizedf("the email or the password is wrong"))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	logging.From(c.Request.Context()).Info("signed in", "account_id", h.Login.AccountID, "login_id", h.Login.ID)
	s.setCookie(c, s.sessionCookieName(), token, "/", h.Expires)
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, viewOf(h, token))
}

// deleteSession: DELETE /api/session → 204; the session ends and the
// cookie is cleared. A signed-in caller must send the CSRF header.
func (s *Server) deleteSession(c *gin.Context) {
	_, session, err := s.signedIn(c)
	switch {
	case err == nil:
		if !humans.CheckCSRF(session, c.GetHeader(CSRFHeader)) {
			fail(c, errs.Forbiddenf("missing or wrong %s header: send the csrfToken of GET %s", CSRFHeader, SessionPath))
			return
		}
		if err := s.deps.Humans.SignOut(c.Request.Context(), session); err != nil {
			fail(c, err)
			return
		}
	case !errors.Is(err, humans.ErrNoSession):
		fail(c, err)
		return
	}
	s.setCookie(c, s.sessionCookieName(), "", "/", time.Time{})
	c.Status(http.StatusNoContent)
}

// signUpView is what POST /api/signup answers, the same whether the email
// was new or already had an account.
type signUpView struct {
	Status  string `json:"status"`
	Email   string `json:"email"`
	Message string `json:"message"`
}

// signUp: POST /api/signup {email, password} → 202 "check your email":
// a new account (no credit until the email is verified) with this
// email's login holding every scope, and a verification link mailed to
// it; for an email that already has an account, the same answer and its
// owner is mailed instead (humans.OpenAccount). 400 names a bad field.
// Sign-ups spend the sign-in budget of the address and of the email
// (docs/accounts.md).
func (s *Server) signUp(c *gin.Context) {
	if !s.jsonFromThisSite(c) {
		return
	}
	var body credentials
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if !s.apiSignInAllowed(c, "addr/"+addressKey(c)) || !s.apiSignInAllowed(c, "email/"+strings.ToLower(strings.TrimSpace(body.Email))) {
		return
	}
	ctx := c.Request.Context()
	out, err := s.deps.Humans.OpenAccount(ctx, "", body.Email, body.Password, nil, false)
	if err != nil {
		fail(c, err)
		return
	}
	if out.Existing {
		logging.From(ctx).Info("sign-up for an email in use; its owner is mailed", "login_id", out.Login.ID)
	} else {
		logging.From(ctx).Info("signed up; the email awaits verification", "account_id", out.Account.ID, "login_id", out.Login.ID)
	}
	email := out.Login.Email
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusAccepted, signUpView{Status: "verification_sent", Email: email,
		Message: "Check your email: we sent a message to " + email + ". Open its link to confirm the address; your free credit is added then."})
}

// apiSignInAllowed counts an attempt against key like signInAllowed, but
// answers 429 as JSON.
func (s *Server) apiSignInAllowed(c *gin.Context, key string) bool {
	if err := spend(c.Request.Context(), s.signins, key, func(limiter.Context, int64) string {
		return "too many sign-in attempts; try again later"
	}); err != nil {
		fail(c, err)
		return false
	}
	return true
}

// sessionPrincipal authenticates a request by the session cookie, for the
// API routes that take it (cookieAllowed). It reports false (nothing
// written) when the request has no live session. A state-changing method
// must bring the session's CSRF token in X-CSRF-Token: otherwise 403.
func (s *Server) sessionPrincipal(c *gin.Context) (ok bool, stop bool) {
	h, session, err := s.signedIn(c)
	if errors.Is(err, humans.ErrNoSession) {
		return false, false
	}
	if err != nil {
		fail(c, err)
		return false, true
	}
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !humans.CheckCSRF(session, c.GetHeader(CSRFHeader)) {
			fail(c, errs.Forbiddenf("missing or wrong %s header: a request signed in by the session cookie must send the csrfToken of GET %s", CSRFHeader, SessionPath))
			return false, true
		}
		if err := s.crossOrigin.Check(c.Request); err != nil {
			fail(c, errs.Forbiddenf("cross-origin request refused"))
			return false, true
		}
	}
	c.Set(principalKey, h.Principal())
	c.Set(sessionKey, h.Login.ID)
	log := logging.From(c.Request.Context()).With("account_id", h.Login.AccountID, "login_id", h.Login.ID)
	c.Request = c.Request.WithContext(logging.With(c.Request.Context(), log))
	return true, false
}
