package frontend

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"conduit/frontend/pages"
	"conduit/internal/errs"
	"conduit/internal/humans"
	"conduit/internal/logging"
)

// Human sign-in (docs/oauth.md): email and password, then a session
// cookie. The rules (password hashing, sessions, CSRF tokens) are
// internal/humans'; here are the cookies and the pages. Every form post
// must be same-origin (net/http's CrossOriginProtection, which reads the
// browser's Sec-Fetch-Site and Origin) and carry its CSRF token: the
// session's for signed-in forms, a double-submit cookie for the sign-in
// form itself (there is no session yet).

// The sign-in pages.
const (
	SignInPath  = "/signin"
	SignOutPath = "/signout"
)

const (
	// sessionCookie holds the session secret; with https it is a
	// __Host- cookie (Secure, whole site, this host only).
	sessionCookie = "conduit_session"
	// formCookie is the sign-in form's double-submit token.
	formCookie = "conduit_signin"
)

// pagePolicy is the Content-Security-Policy of a server-rendered page: no
// script, forms to this origin only, and the dashboard's own stylesheet
// (frontend/pages links it) besides inline styles.
const pagePolicy = "default-src 'none'; style-src 'self' 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// renderPage writes a page (frontend/pages); pages may submit forms to
// this origin only and run no script.
func renderPage(c *gin.Context, status int, p *pages.Page, v any) {
	page, err := p.Render(v)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Content-Security-Policy", pagePolicy)
	c.Data(status, "text/html; charset=utf-8", page)
	c.Abort()
}

// secureCookies: cookies are Secure (and the session a __Host- cookie)
// when the public URL is https.
func (s *Server) secureCookies() bool {
	return strings.HasPrefix(s.deps.Config.BaseURL(), "https://")
}

func (s *Server) sessionCookieName() string {
	if s.secureCookies() {
		return "__Host-" + sessionCookie
	}
	return sessionCookie
}

func (s *Server) setCookie(c *gin.Context, name, value, path string, expires time.Time) {
	ck := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: s.secureCookies(), SameSite: http.SameSiteLaxMode}
	if value == "" {
		ck.MaxAge = -1
	} else {
		ck.Expires = expires
	}
	http.SetCookie(c.Writer, ck)
}

// signedIn finds the human whose session cookie came with the request,
// and the session secret (for CSRF tokens). No or a dead session is
// humans.ErrNoSession.
func (s *Server) signedIn(c *gin.Context) (humans.Human, string, error) {
	ck, err := c.Request.Cookie(s.sessionCookieName())
	if err != nil || ck.Value == "" {
		return humans.Human{}, "", humans.ErrNoSession
	}
	h, err := s.deps.Humans.Session(c.Request.Context(), ck.Value)
	return h, ck.Value, err
}

// safeNext keeps a post-sign-in destination on this site: a path, never
// another origin (//host, /\host, a scheme).
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || len(next) > 4096 {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return ""
	}
	return next
}

// signInPage: GET /signin[?next=/path]. Signed in: on to next, or who is
// signed in with a sign-out button. Otherwise the form, with a fresh
// double-submit token.
func (s *Server) signInPage(c *gin.Context) {
	next := safeNext(c.Query("next"))
	h, session, err := s.signedIn(c)
	switch {
	case err == nil && next != "":
		c.Redirect(http.StatusSeeOther, next)
		return
	case err == nil:
		renderPage(c, http.StatusOK, pages.SignIn, pages.SignInView{SignedIn: true, Email: h.Login.Email, CSRF: humans.CSRFToken(session), Out: SignOutPath})
		return
	case !errors.Is(err, humans.ErrNoSession):
		fail(c, err)
		return
	}
	s.signInForm(c, nil, "", next)
}

// signInForm shows the form, with refusal's sentence when it is shown
// again.
func (s *Server) signInForm(c *gin.Context, refusal *errs.Error, email, next string) {
	token := humans.NewFormToken()
	s.setCookie(c, formCookie, token, SignInPath, time.Now().Add(time.Hour))
	v := pages.SignInView{Email: email, Next: next, CSRF: token, Action: SignInPath}
	if refusal != nil {
		v.Error = refusal.Msg
	}
	renderPage(c, pageStatus(refusal), pages.SignIn, v)
}

// signIn: POST /signin {email, password, csrf, next}. Same-origin with the
// form's token, within the sign-in rate limit (per address and per
// email); then the session cookie and on to next.
func (s *Server) signIn(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	if err := s.crossOrigin.Check(c.Request); err != nil {
		failPage(c, "This form came from another site", errs.Forbiddenf("Open the sign-in page on this site and sign in there."))
		return
	}
	email, next := c.PostForm("email"), safeNext(c.PostForm("next"))
	ck, err := c.Request.Cookie(formCookie)
	if err != nil || !humans.SameToken(ck.Value, c.PostForm("csrf")) {
		failPage(c, "This form has expired", errs.Forbiddenf("Reload the sign-in page and try again."))
		return
	}
	if !s.signInAllowed(c, "addr/"+addressKey(c)) || !s.signInAllowed(c, "email/"+strings.ToLower(strings.TrimSpace(email))) {
		return
	}
	token, h, err := s.deps.Humans.SignIn(c.Request.Context(), email, c.PostForm("password"))
	if errors.Is(err, humans.ErrBadCredentials) {
		logging.From(c.Request.Context()).Info("sign-in refused")
		if len(email) > 254 {
			email = ""
		}
		s.signInForm(c, errs.Unauthorizedf("The email or the password is wrong."), email, next)
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	logging.From(c.Request.Context()).Info("signed in", "account_id", h.Login.AccountID, "login_id", h.Login.ID)
	s.setCookie(c, formCookie, "", SignInPath, time.Time{})
	s.setCookie(c, s.sessionCookieName(), token, "/", h.Expires)
	if next == "" {
		next = SignInPath
	}
	c.Redirect(http.StatusSeeOther, next)
}

// signOut: POST /signout {csrf}: ends the session, clears the cookie.
func (s *Server) signOut(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	if err := s.crossOrigin.Check(c.Request); err != nil {
		failPage(c, "This form came from another site", errs.Forbiddenf("Sign out from this site's pages."))
		return
	}
	_, session, err := s.signedIn(c)
	if err != nil && !errors.Is(err, humans.ErrNoSession) {
		fail(c, err)
		return
	}
	if err == nil {
		if !humans.CheckCSRF(session, c.PostForm("csrf")) {
			failPage(c, "This form has expired", errs.Forbiddenf("Reload the page and try again."))
			return
		}
		if err := s.deps.Humans.SignOut(c.Request.Context(), session); err != nil {
			fail(c, err)
			return
		}
	}
	s.setCookie(c, s.sessionCookieName(), "", "/", time.Time{})
	c.Redirect(http.StatusSeeOther, SignInPath)
}

// signInLimiter counts sign-in attempts (signin.rate_limit), per client
// address and per email alike: a guesser spreading over addresses still
// spends the email's budget.
func (s *Server) signInLimiter() *limiter.Limiter {
	rate, err := limiter.NewRateFromFormatted(s.deps.Config.SignIn.RateLimit)
	if err != nil {
		panic(err) // config.Validate refuses a malformed rate
	}
	return limiter.New(memory.NewStore(), rate)
}

// signInAllowed counts an attempt against key, answering 429 (a page,
// with Retry-After) when the budget is spent.
func (s *Server) signInAllowed(c *gin.Context, key string) bool {
	if err := spend(c.Request.Context(), s.signins, key, func(_ limiter.Context, retry int64) string {
		return fmt.Sprintf("Wait %d seconds, then try again.", retry)
	}); err != nil {
		failPage(c, "Too many sign-in attempts", err)
		return false
	}
	return true
}
