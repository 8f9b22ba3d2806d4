package frontend_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"mime/quotedprintable"
	"net/http"
	netmail "net/mail"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/accounts"
	"conduit/internal/config"
	"conduit/internal/humans"
	"conduit/internal/mail/mailtest"
)

// Sign-up on the real stack (docs/accounts.md, "Sign-up"): the free
// credit waits for the email's verification link, which the dev mailbox
// shows; the answer is the same for a new and a registered email, whose
// owner is mailed instead; sign-ups spend the sign-in budget; and the
// outbox leaves over SMTP.

// mailboxEntry is one message of the dev mailbox page.
type mailboxEntry struct{ kind, to, status, link, body string }

var mailRE = regexp.MustCompile(`(?s)<article class="mail" data-kind="([^"]*)">.*?<strong class="to">([^<]*)</strong> · [^·]* · ([^<]*)</p>(?:\s*<p><a class="link" href="([^"]*)">)?.*?<pre>(.*?)</pre>`)

// mailbox reads the dev mailbox page of base, newest first.
func mailbox(t testing.TB, base string) []mailboxEntry {
	t.Helper()
	resp, err := http.Get(base + frontend.MailboxPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("mailbox: %d %s", resp.StatusCode, b)
	}
	var out []mailboxEntry
	for _, m := range mailRE.FindAllStringSubmatch(string(b), -1) {
		out = append(out, mailboxEntry{kind: m[1], to: html.UnescapeString(m[2]), status: m[3], link: html.UnescapeString(m[4]), body: html.UnescapeString(m[5])})
	}
	return out
}

// mailsTo lists the mailbox's messages to email of kind, newest first.
func mailsTo(t testing.TB, email, kind string) []mailboxEntry {
	t.Helper()
	var out []mailboxEntry
	for _, m := range mailbox(t, env.URL) {
		if m.to == email && m.kind == kind {
			out = append(out, m)
		}
	}
	return out
}

// verifyLink is the newest verification link mailed to email, as a path
// on base.
func verifyLink(t testing.TB, base, email string) string {
	t.Helper()
	ms := mailsTo(t, email, accounts.MailVerify)
	if len(ms) == 0 {
		t.Fatalf("no verification message to %s in the mailbox", email)
	}
	u, err := url.Parse(ms[0].link)
	if err != nil || u.Path != accounts.VerifyPath {
		t.Fatalf("verification link %q", ms[0].link)
	}
	return u.RequestURI()
}

func balanceOf(t testing.TB, b *browser) float64 {
	t.Helper()
	st, bal := b.api("GET", "/api/account/balance", nil)
	if st != http.StatusOK {
		t.Fatalf("balance: %d %v", st, bal)
	}
	return bal["balanceUsd"].(float64)
}

func freeGrants(t testing.TB, b *browser) int {
	t.Helper()
	st, page := b.api("GET", "/api/account/ledger?type=free_grant", nil)
	if st != http.StatusOK {
		t.Fatalf("ledger: %d %v", st, page)
	}
	return len(page["entries"].([]any))
}

func TestSignUpGrantsNothingUntilTheEmailIsVerified(t *testing.T) {
	email := uniqueEmail(t)
	const password = "a password long enough"
	b := newBrowser(t, env.URL)
	st, raw, h := b.apiRaw("POST", frontend.SignUpPath, map[string]string{"email": email, "password": password})
	if st != http.StatusAccepted || len(h.Values("Set-Cookie")) != 0 || !strings.Contains(string(raw), "Check your email") {
		t.Fatalf("sign-up: %d %s %v", st, raw, h)
	}
	if st, _ := b.api("GET", frontend.SessionPath, nil); st != http.StatusUnauthorized {
		t.Fatalf("sign-up signed in: %d", st)
	}
	// The login works at once, with no credit.
	if st, in := b.api("POST", frontend.SessionPath, map[string]string{"email": email, "password": password}); st != http.StatusOK {
		t.Fatalf("sign-in: %d %v", st, in)
	}
	if bal := balanceOf(t, b); bal != 0 || freeGrants(t, b) != 0 {
		t.Fatalf("before verification: balance %v, %d free grants", bal, freeGrants(t, b))
	}
	// The message is in the outbox at once and its delivery (the Mail
	// workflow) marks it delivered.
	apptest.Eventually(t, 30*time.Second, "the verification message delivered", func() error {
		ms := mailsTo(t, email, accounts.MailVerify)
		if len(ms) != 1 || ms[0].status != "delivered" {
			return fmt.Errorf("mailbox: %+v", ms)
		}
		return nil
	})
	link := verifyLink(t, env.URL, email)
	if m := mailsTo(t, email, accounts.MailVerify)[0]; !strings.Contains(m.body, m.link) || !strings.Contains(m.body, "5 USD") {
		t.Fatalf("message body: %s", m.body)
	}
	u, _ := url.Parse(link)
	q := u.Query()

	// Tampered links are refused and grant nothing: another token, login
	// or email, a token cut short, none at all.
	tamper := func(k, v string) string {
		q2 := url.Values{}
		for kk, vv := range q {
			q2[kk] = vv
		}
		if v == "" {
			q2.Del(k)
		} else {
			q2.Set(k, v)
		}
		return accounts.VerifyPath + "?" + q2.Encode()
	}
	tok := q.Get("token")
	flipped := tok[:len(tok)-1] + "A"
	if strings.HasSuffix(tok, "A") {
		flipped = tok[:len(tok)-1] + "B"
	}
	for _, bad := range []string{
		tamper("token", flipped), tamper("token", tok[:len(tok)-2]), tamper("token", ""),
		tamper("login", "login_00000000000000000000"), tamper("email", "someone-else@test.conduit.local"),
		tamper("token", "9999999999."+strings.SplitN(tok, ".", 2)[1]),
	} {
		if p := b.do("GET", bad, nil); p.status != http.StatusForbidden || !strings.Contains(p.body, "not valid") {
			t.Fatalf("tampered link %s: %d %s", bad, p.status, p.body)
		}
	}
	// An expired link, properly signed with the deployment's secret a day
	// and more ago, is refused as expired.
	signer, err := accounts.NewVerifyLinks(env.Config.SignUp.Secret, env.Config.SignUp.VerifyTTL)
	if err != nil {
		t.Fatal(err)
	}
	old := &accounts.Service{BaseURL: env.URL, VerifyLinks: signer.WithClock(func() time.Time { return time.Now().Add(-25 * time.Hour) })}
	expired, _ := old.VerifyLink(q.Get("login"), email)
	eu, _ := url.Parse(expired)
	if p := b.do("GET", eu.RequestURI(), nil); p.status != http.StatusGone || !strings.Contains(p.body, "expired") {
		t.Fatalf("expired link: %d %s", p.status, p.body)
	}
	if bal := balanceOf(t, b); bal != 0 || freeGrants(t, b) != 0 {
		t.Fatalf("after refused links: balance %v", bal)
	}

	// The link verifies and grants the credit once, however often and
	// however concurrently it is followed (a mail scanner and the human):
	// one answer says the credit was added, the others that it had been.
	var wg sync.WaitGroup
	var mu sync.Mutex
	added, before := 0, 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(env.URL + link)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resp.StatusCode == http.StatusOK && strings.Contains(string(body), "5 USD of free credit has been added"):
				added++
			case resp.StatusCode == http.StatusOK && strings.Contains(string(body), "confirmed before"):
				before++
			default:
				t.Errorf("verification: %d %s", resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	if added != 1 || before != 7 {
		t.Fatalf("8 verifications: %d added the credit, %d found it added", added, before)
	}
	if bal := balanceOf(t, b); bal != 5 || freeGrants(t, b) != 1 {
		t.Fatalf("after verification: balance %v, %d free grants", bal, freeGrants(t, b))
	}
	p := b.do("GET", link, nil)
	if p.status != http.StatusOK || !strings.Contains(p.body, "confirmed before") {
		t.Fatalf("verification again: %d %s", p.status, p.body)
	}
	if bal := balanceOf(t, b); bal != 5 || freeGrants(t, b) != 1 {
		t.Fatalf("after the link twice: balance %v, %d free grants", bal, freeGrants(t, b))
	}
}

// answer is a sign-up's answer with the email it names put aside: what a
// caller could compare between two sign-ups.
type answer struct {
	status int
	body   string
	header string
}

func signUpAnswer(t *testing.T, email, password string) answer {
	t.Helper()
	st, raw, h := newBrowser(t, env.URL).apiRaw("POST", frontend.SignUpPath, map[string]string{"email": email, "password": password})
	var keep []string
	for _, k := range []string{"Content-Type", "Cache-Control", "Set-Cookie", "Retry-After"} {
		keep = append(keep, k+"="+strings.Join(h.Values(k), ","))
	}
	return answer{status: st, body: strings.ReplaceAll(string(raw), strings.ToLower(email), "<email>"), header: strings.Join(keep, ";")}
}

func TestSignUpDoesNotTellWhetherAnEmailIsRegistered(t *testing.T) {
	// A verified account, and an address nobody used.
	owner := newBrowser(t, env.URL)
	taken := uniqueEmail(t)
	owner.signUp(taken, "the owner's password")
	fresh := "new-" + uniqueEmail(t)

	a := signUpAnswer(t, fresh, "an attacker's password")
	b := signUpAnswer(t, strings.ToUpper(taken), "an attacker's password")
	if a != b || a.status != http.StatusAccepted {
		t.Fatalf("new and registered emails answered differently:\n new        %+v\n registered %+v", a, b)
	}
	// The owner is told, and nothing changed for them: their password,
	// their balance, their one grant.
	ms := mailsTo(t, taken, accounts.MailSignUpAttempt)
	if len(ms) != 1 || !strings.Contains(ms[0].body, "Someone tried to sign up") || strings.Contains(ms[0].body, "an attacker") {
		t.Fatalf("owner's mailbox: %+v", ms)
	}
	if st, _ := newBrowser(t, env.URL).api("POST", frontend.SessionPath, map[string]string{"email": taken, "password": "an attacker's password"}); st != http.StatusUnauthorized {
		t.Fatalf("the attempt's password signs in: %d", st)
	}
	if bal := balanceOf(t, owner); bal != 5 || freeGrants(t, owner) != 1 {
		t.Fatalf("owner after the attempt: balance %v", bal)
	}
	// An address signed up but not verified yet: the same answer again,
	// and its owner gets a fresh link (the first may be lost).
	if c := signUpAnswer(t, fresh, "another password entirely"); c != a {
		t.Fatalf("unverified email answered differently:\n %+v\n %+v", c, a)
	}
	if ms := mailsTo(t, fresh, accounts.MailVerify); len(ms) != 2 {
		t.Fatalf("unverified owner's mailbox: %+v", ms)
	}

	// Sign-in does not tell an unknown email from a wrong password either.
	unknown := newBrowser(t, env.URL)
	st1, raw1, _ := unknown.apiRaw("POST", frontend.SessionPath, map[string]string{"email": "nobody-" + uniqueEmail(t), "password": "a wrong password"})
	st2, raw2, _ := unknown.apiRaw("POST", frontend.SessionPath, map[string]string{"email": taken, "password": "a wrong password"})
	if st1 != http.StatusUnauthorized || st1 != st2 || string(raw1) != string(raw2) {
		t.Fatalf("sign-in: unknown %d %s, wrong password %d %s", st1, raw1, st2, raw2)
	}
}

// Sign-ups and sign-ins share one budget per address (and per email), as
// docs/accounts.md says.
func TestSignUpSpendsTheSignInBudget(t *testing.T) {
	base := startOAuthServer(t, func(c *config.Config) { c.SignIn.RateLimit = "3-M" })
	b := newBrowser(t, base)
	if st, _ := b.api("POST", frontend.SessionPath, map[string]string{"email": uniqueEmail(t), "password": "a wrong password"}); st != http.StatusUnauthorized {
		t.Fatalf("sign-in: %d", st)
	}
	for i := range 2 {
		if st, body := b.api("POST", frontend.SignUpPath, map[string]string{"email": fmt.Sprintf("n%d-%s", i, uniqueEmail(t)), "password": "a password long enough"}); st != http.StatusAccepted {
			t.Fatalf("sign-up %d: %d %v", i, st, body)
		}
	}
	email := "over-" + uniqueEmail(t)
	st, raw, h := b.apiRaw("POST", frontend.SignUpPath, map[string]string{"email": email, "password": "a password long enough"})
	if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("fourth attempt from the address: %d %s", st, raw)
	}
	if ms := mailsTo(t, email, accounts.MailVerify); len(ms) != 0 {
		t.Fatalf("a refused sign-up mailed: %+v", ms)
	}
	if st, _ := b.api("POST", frontend.SessionPath, map[string]string{"email": uniqueEmail(t), "password": "a wrong password"}); st != http.StatusTooManyRequests {
		t.Fatalf("sign-in after the sign-ups spent the budget: %d", st)
	}
	// The mailbox is a dev tool: not served by a frontend without them.
	resp, err := http.Get(base + frontend.MailboxPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("mailbox without dev tools: %d", resp.StatusCode)
	}
}

// With mail.sender smtp the worker delivers the outbox over SMTP: the
// verification link arrives at an SMTP server played in process, and it
// verifies.
func TestSignUpMailsTheLinkOverSMTP(t *testing.T) {
	srv := mailtest.Start(t, "conduit", "smtp password")
	env.StopWorker()
	t.Cleanup(func() {
		if err := env.StartWorker(); err != nil {
			t.Error(err)
		}
	})
	cfg := *env.Config
	cfg.Mail = config.Mail{Sender: "smtp", From: "no-reply@conduit.test", SMTPHost: srv.Host, SMTPPort: srv.Port, SMTPUser: "conduit", SMTPPassword: "smtp password"}
	p := *env.Platform
	p.Config = &cfg
	w, err := p.StartWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	email := uniqueEmail(t)
	b := newBrowser(t, env.URL)
	if st, body := b.api("POST", frontend.SignUpPath, map[string]string{"email": email, "password": "a password long enough"}); st != http.StatusAccepted {
		t.Fatalf("sign-up: %d %v", st, body)
	}
	var got mailtest.Received
	apptest.Eventually(t, 30*time.Second, "the message at the SMTP server", func() error {
		for _, r := range srv.Received() {
			if r.To == email {
				got = r
				return nil
			}
		}
		return errors.New("not yet")
	})
	if got.From != "no-reply@conduit.test" || got.User != "conduit" {
		t.Fatalf("received %+v", got)
	}
	text := decodeMessage(t, got.Data)
	m := regexp.MustCompile(`http://\S+` + regexp.QuoteMeta(accounts.VerifyPath) + `\?\S+`).FindString(text)
	if m == "" {
		t.Fatalf("no link in the message:\n%s", text)
	}
	u, _ := url.Parse(m)
	if p := b.do("GET", u.RequestURI(), nil); p.status != http.StatusOK || !strings.Contains(p.body, "5 USD of free credit") {
		t.Fatalf("the mailed link: %d %s", p.status, p.body)
	}
	apptest.Eventually(t, 30*time.Second, "the outbox row marked sent", func() error {
		ms := mailsTo(t, email, accounts.MailVerify)
		if len(ms) != 1 || ms[0].status != "delivered" {
			return fmt.Errorf("%+v", ms)
		}
		return nil
	})

	// A recipient the server refuses for good: the delivery stops at the
	// first attempt and the message keeps why.
	srv.RefuseRecipients(550)
	defer srv.RefuseRecipients(0)
	refused := "refused-" + uniqueEmail(t)
	if st, body := b.api("POST", frontend.SignUpPath, map[string]string{"email": refused, "password": "a password long enough"}); st != http.StatusAccepted {
		t.Fatalf("sign-up: %d %v", st, body)
	}
	apptest.Eventually(t, 30*time.Second, "the refused message marked failed", func() error {
		ms := mailsTo(t, refused, accounts.MailVerify)
		if len(ms) != 1 || !strings.HasPrefix(ms[0].status, "failed: ") || !strings.Contains(ms[0].status, "550") {
			return fmt.Errorf("%+v", ms)
		}
		return nil
	})
	row, err := env.Platform.Store.Mailbox(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range row {
		if m.To == refused && m.Attempts != 1 {
			t.Fatalf("a permanent refusal was retried: %d attempts", m.Attempts)
		}
	}
}

// decodeMessage is a mailed message's text body.
func decodeMessage(t *testing.T, data []byte) string {
	t.Helper()
	m, err := netmail.ReadMessage(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A message written where no delivery could be started (the account
// command has no Temporal client) is started by the outbox sweep.
func TestOutboxSweepDeliversWhatNobodyStarted(t *testing.T) {
	cmd := &accounts.Service{Store: env.Platform.Store, BaseURL: env.URL, VerifyLinks: env.Platform.Accounts().VerifyLinks} // no Outbox
	email := uniqueEmail(t)
	out, err := (&humans.Service{Store: env.Platform.Store, Accounts: cmd}).OpenAccount(context.Background(), "ops", email, "a password long enough", nil, false)
	if err != nil || out.Existing {
		t.Fatal(err)
	}
	if ms := mailsTo(t, email, accounts.MailVerify); len(ms) != 1 || ms[0].status != "waiting" {
		t.Fatalf("before the sweep: %+v", ms)
	}
	d := env.Platform.Outbox()
	d.MinAge = time.Nanosecond
	if n, err := d.Sweep(context.Background()); err != nil || n == 0 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	apptest.Eventually(t, 30*time.Second, "the swept message delivered", func() error {
		if ms := mailsTo(t, email, accounts.MailVerify); len(ms) != 1 || ms[0].status != "delivered" {
			return fmt.Errorf("%+v", ms)
		}
		return nil
	})
}
