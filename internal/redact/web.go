package redact

import (
	"bytes"
	"math"
	"regexp"
	"strings"

	"mvdan.cc/xurls/v2"
)

// emails: every '@' is grown into local@domain by hand (a regex over the
// whole text would be the slowest part of the detector), the domain must
// have a dot and an alphabetic TLD.
func (sc *scanner) emails() {
	t := sc.text
	from := 0
	for {
		i := strings.IndexByte(t[from:], '@')
		if i < 0 {
			return
		}
		at := from + i
		from = at + 1
		s := at
		for s > 0 && isLocalByte(t[s-1]) {
			s--
		}
		for s < at && (t[s] == '.' || t[s] == '-') {
			s++
		}
		e := at + 1
		for e < len(t) && (isAlnum(t[e]) || t[e] == '.' || t[e] == '-') {
			e++
		}
		for e > at+1 && (t[e-1] == '.' || t[e-1] == '-') {
			e--
		}
		if s == at || e == at+1 {
			continue
		}
		dom := t[at+1 : e]
		dot := strings.LastIndexByte(dom, '.')
		if dot <= 0 || len(dom)-dot-1 < 2 || strings.Contains(dom, "..") {
			continue
		}
		tld := dom[dot+1:]
		ok := true
		for k := 0; k < len(tld); k++ {
			if !isUpper(tld[k]) && !isLower(tld[k]) {
				ok = false
			}
		}
		// user:pass@host is a credential (secrets), not an address — but
		// mailto:user@host is an address.
		if !ok || (s > 0 && t[s-1] == ':' && (sc.v1 || !(s >= 7 && equalFoldASCII(t[s-7:s], "mailto:")))) {
			continue
		}
		if sc.want(Email) {
			sc.add(Email, s, e, 1, "email", 2)
		}
		sc.names.emailLocal(t[s:at])
		from = e
	}
}

func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

var (
	strictURL  = xurls.Strict()
	relaxedURL = xurls.Relaxed()
	connString = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^\s:@/]+:[^\s@/]+@[^\s/?#'"<>]+[^\s'"<>]*`)
)

// urls: every "://" and "www." is grown to its whitespace-delimited token
// and handed to xurls, which trims trailing punctuation. A URL carrying a
// password (scheme://user:pass@host) is a SECRET.
func (sc *scanner) urls() {
	t := sc.text
	lower := sc.lower
	var found [][2]int
	check := func(s, e int, re *regexp.Regexp) {
		for _, f := range found {
			if s >= f[0] && s < f[1] {
				return
			}
		}
		tok := t[s:e]
		if m := connString.FindStringIndex(tok[:min(len(tok), 1024)]); m != nil && sc.want(Secret) {
			sc.add(Secret, s, s+m[1], 0.95, "connection-string", 3)
			found = append(found, [2]int{s, s + m[1]})
			return
		}
		if !sc.want(URL) {
			return
		}
		// xurls sees at most 512 bytes (its cost per byte is high); a match
		// that reaches the cut runs on to the token's end by hand
		short := tok[:min(len(tok), 512)]
		if m := re.FindStringIndex(short); m != nil {
			end := m[1]
			if end == len(short) && len(short) < len(tok) {
				end = len(strings.TrimRight(tok, ".,;:!?'\")]}"))
			}
			sc.add(URL, s+m[0], s+end, 0.95, "url", 1)
			found = append(found, [2]int{s + m[0], s + end})
		}
	}
	// each whitespace-delimited token is checked once, however many
	// "://" or "www." it holds
	tokDone := -1
	for from := 0; ; {
		i := indexBytes(lower[from:], "://")
		if i < 0 {
			break
		}
		p := from + i
		from = p + 3
		if p < tokDone {
			continue
		}
		s := p
		for s > 0 && (isAlnum(t[s-1]) || t[s-1] == '+' || t[s-1] == '.' || t[s-1] == '-') {
			s--
		}
		if s == p {
			continue
		}
		tokDone = tokenEnd(t, p)
		check(s, tokDone, strictURL)
	}
	tokDone = -1
	for from := 0; ; {
		i := indexBytes(lower[from:], "www.")
		if i < 0 {
			break
		}
		p := from + i
		from = p + 4
		if p < tokDone || (p > 0 && !isSpaceOrPunct(t[p-1])) {
			continue
		}
		tokDone = tokenEnd(t, p)
		check(p, tokDone, relaxedURL)
	}
}

func indexBytes(b []byte, sub string) int { return bytes.Index(b, []byte(sub)) }

// tokenEnd: the end of the token at p, at most 2 KiB on (a bound, so a
// text of "a://a://…" stays linear).
func tokenEnd(t string, p int) int {
	e := p
	for e < len(t) && e-p < 2048 && !isSpace(t[e]) && t[e] != '"' && t[e] != '<' && t[e] != '>' && t[e] != '`' {
		e++
	}
	return e
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

func isSpaceOrPunct(c byte) bool { return !isWordByte(c) }

// secretRule is one curated credential pattern. keywords pre-filter it
// (found by the one Aho–Corasick pass); the regex runs anchored at the
// keyword, on a bounded window.
type secretRule struct {
	id       string
	keywords []string
	boundary bool // the keyword starts a token
	re       *regexp.Regexp
	// value: the regex's group 1 is the secret (assignments); else the whole match.
	value   bool
	entropy float64 // minimum Shannon entropy (bits per char) of the secret
	back    int     // the match may start this many bytes before the keyword
	window  int
}

var secretRules = []secretRule{
	{id: "aws-access-key", keywords: []string{"akia", "asia", "abia", "acca"}, boundary: true,
		re: regexp.MustCompile(`^(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`)},
	{id: "github-token", keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, boundary: true,
		re: regexp.MustCompile(`^gh[pousr]_[A-Za-z0-9]{36,255}`)},
	{id: "github-pat", keywords: []string{"github_pat_"}, boundary: true, re: regexp.MustCompile(`^github_pat_[A-Za-z0-9_]{22,255}`)},
	{id: "gitlab-token", keywords: []string{"glpat-", "gldt-", "glrt-"}, boundary: true, re: regexp.MustCompile(`^gl(?:pat|dt|rt)-[A-Za-z0-9_-]{20,}`)},
	{id: "slack-token", keywords: []string{"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xapp-"}, boundary: true,
		re: regexp.MustCompile(`^(?:xox[abeprs]|xapp)-[A-Za-z0-9-]{10,}`)},
	{id: "slack-webhook", keywords: []string{"hooks.slack.com/"}, back: 8,
		re: regexp.MustCompile(`https?://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_-]{20,}`)},
	{id: "stripe-key", keywords: []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"}, boundary: true,
		re: regexp.MustCompile(`^(?:[sr]k_(?:live|test)|whsec)_[A-Za-z0-9]{16,}`)},
	{id: "openai-anthropic-key", keywords: []string{"sk-"}, boundary: true,
		re: regexp.MustCompile(`^sk-(?:[a-z]+-)*[A-Za-z0-9_-]{20,}`), entropy: 3.5},
	{id: "google-api-key", keywords: []string{"aiza"}, boundary: true, re: regexp.MustCompile(`^AIza[0-9A-Za-z_-]{35}`)},
	{id: "huggingface-token", keywords: []string{"hf_"}, boundary: true, re: regexp.MustCompile(`^hf_[A-Za-z0-9]{34,}`), entropy: 3.5},
	{id: "npm-token", keywords: []string{"npm_"}, boundary: true, re: regexp.MustCompile(`^npm_[A-Za-z0-9]{36}`)},
	{id: "pypi-token", keywords: []string{"pypi-"}, boundary: true, re: regexp.MustCompile(`^pypi-[A-Za-z0-9_-]{50,}`)},
	{id: "sendgrid-key", keywords: []string{"sg."}, boundary: true, re: regexp.MustCompile(`^SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`)},
	{id: "private-key", keywords: []string{"-----begin"}, window: 16 << 10,
		re: regexp.MustCompile(`^-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)`)},
	{id: "jwt", keywords: []string{"eyj"}, boundary: true,
		re: regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{id: "auth-header", keywords: []string{"bearer ", "basic "}, boundary: true, value: true,
		re: regexp.MustCompile(`^(?i:bearer|basic)\s+([A-Za-z0-9._~+/=-]{16,})`), entropy: 3.0},
	{id: "assignment", keywords: []string{"password", "passwd", "pwd", "passphrase", "secret", "token", "api_key", "apikey",
		"api-key", "access_key", "secret_key", "client_secret", "private_key", "auth_key", "credential", "passwort", "mot de passe", "contraseña"},
		value: true, entropy: 2.5, back: 24,
		re: regexp.MustCompile(`^[A-Za-z0-9_.-]*(?i:password|passwd|pwd|passphrase|secret|token|api_key|apikey|api-key|access_key|secret_key|client_secret|private_key|auth_key|credentials?|passwort|mot de passe|contraseña)[A-Za-z0-9_.-]*["']?\s*(?:=|:|=>|:=|\s+is:?|\s+ist:?|\s+es:?)\s*["'\x60]?([^\s"'\x60,;<>)\]}]{8,200})`)},
}

func (sc *scanner) secrets() {
	t := sc.text
	last := 0
	for _, h := range sc.hits[kwSecret] {
		r := &secretRules[h.arg]
		s := h.s
		if r.back > 0 {
			// Assignments: start at the identifier the keyword is part of.
			for s > 0 && h.s-s < r.back && (isAlnum(t[s-1]) || t[s-1] == '_' || t[s-1] == '.' || t[s-1] == '-') {
				s--
			}
			if r.id == "slack-webhook" {
				s = max(0, h.s-r.back)
			}
		}
		if s < last {
			continue
		}
		w := r.window
		if w == 0 {
			w = 512
		}
		// the long window only behind a real PEM header
		if r.id == "private-key" && !strings.Contains(t[s:min(len(t), s+64)], "PRIVATE KEY") {
			continue
		}
		win := t[s:min(len(t), s+w)]
		var m []int
		if r.id == "slack-webhook" {
			m = r.re.FindStringIndex(win)
		} else {
			m = r.re.FindStringSubmatchIndex(win)
		}
		if m == nil {
			continue
		}
		vs, ve := s+m[0], s+m[1]
		if r.value {
			vs, ve = s+m[2], s+m[3]
		}
		val := t[vs:ve]
		if r.entropy > 0 && (entropy(val) < r.entropy || placeholderish(val)) {
			continue
		}
		sc.add(Secret, vs, ve, 0.95, r.id, 3)
		last = ve
	}
}

// placeholderish: values that stand for a secret without being one.
func placeholderish(v string) bool {
	l := strings.ToLower(v)
	if strings.HasPrefix(l, "${") || strings.HasPrefix(l, "{{") || strings.HasPrefix(l, "<") || strings.HasPrefix(l, "%(") ||
		strings.HasPrefix(l, "process.env") || strings.HasPrefix(l, "os.environ") || strings.HasPrefix(l, "os.getenv") ||
		strings.HasPrefix(l, "[") || strings.Contains(l, "redacted") || strings.Contains(l, "xxxx") || strings.Contains(l, "****") {
		return true
	}
	return false
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
