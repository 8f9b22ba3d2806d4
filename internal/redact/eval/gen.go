// Package eval generates a labelled evaluation set for internal/redact and
// scores the detector the way Presidio's evaluator scores Presidio
// (character IoU ≥ 0.9 per span, type-blind PII precision/recall with F2,
// per-type P/R/F1). See docs/redaction.md for the figures.
package eval

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"conduit/internal/redact"
)

// Span is a labelled entity: [Start, End) in code points.
type Span struct {
	Type  redact.Type
	Start int
	End   int
	Slot  string
}

// Record is one labelled text.
type Record struct {
	Text   string
	Domain string // chat, email, clinical, ticket, log, code, clean
	Locale string
	Split  string // dev or test (by template)
	Spans  []Span
}

type person struct{ first, last string }

type filler struct {
	r   *rand.Rand
	loc locale
	p   [2]person
	// one value per slot within a record, so repeats agree
	memo map[string]string
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func (f *filler) person(l locale) person {
	first, last := l.first, l.last
	if l.code == "en-US" {
		n := enNames()
		first, last = n[0], n[1]
	}
	return person{pick(f.r, first), pick(f.r, last)}
}

func digits(r *rand.Rand, format string) string {
	var b strings.Builder
	for _, c := range format {
		if c == '#' {
			b.WriteByte(byte('0' + r.IntN(10)))
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// phone draws a number in one of the locale's formats that its numbering
// plan allows (libphonenumber's metadata is the reference for which
// ranges are in service); the detector is scored on finding and
// delimiting it in text.
func (f *filler) phone() string {
	region := strings.ToUpper(f.loc.code[len(f.loc.code)-2:])
	for {
		v := digits(f.r, pick(f.r, f.loc.phoneFormats))
		if num, err := phonenumbers.Parse(v, region); err == nil && phonenumbers.IsValidNumber(num) {
			return v
		}
	}
}

func luhnDigit(d string) byte {
	sum := 0
	dbl := true
	for k := len(d) - 1; k >= 0; k-- {
		v := int(d[k] - '0')
		if dbl {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		dbl = !dbl
	}
	return byte('0' + (10-sum%10)%10)
}

func (f *filler) card() string {
	r := f.r
	type net struct {
		prefix string
		n      int
		groups []int
	}
	nets := []net{{"4", 16, []int{4, 4, 4, 4}}, {"51", 16, []int{4, 4, 4, 4}}, {"55", 16, []int{4, 4, 4, 4}},
		{"2221", 16, []int{4, 4, 4, 4}}, {"37", 15, []int{4, 6, 5}}, {"34", 15, []int{4, 6, 5}}, {"6011", 16, []int{4, 4, 4, 4}},
		{"3530", 16, []int{4, 4, 4, 4}}}
	nt := pick(r, nets)
	d := nt.prefix
	for len(d) < nt.n-1 {
		d += string(byte('0' + r.IntN(10)))
	}
	d += string(luhnDigit(d))
	sep := pick(r, []string{" ", "-", ""})
	var parts []string
	k := 0
	for _, g := range nt.groups {
		parts = append(parts, d[k:k+g])
		k += g
	}
	return strings.Join(parts, sep)
}

func (f *filler) ssn() string {
	r := f.r
	area := 1 + r.IntN(899)
	for area == 666 {
		area = 1 + r.IntN(899)
	}
	g, s := 1+r.IntN(99), 1+r.IntN(9999)
	sep := "-"
	if r.IntN(5) == 0 {
		sep = " "
	}
	return fmt.Sprintf("%03d%s%02d%s%04d", area, sep, g, sep, s)
}

func (f *filler) iban() string {
	r := f.r
	type c struct {
		cc    string
		bban  int
		alpha int // leading letters in the BBAN (bank code)
	}
	cs := []c{{"DE", 18, 0}, {"GB", 18, 4}, {"FR", 23, 0}, {"ES", 20, 0}, {"NL", 14, 4}, {"IT", 23, 1}, {"BE", 12, 0}, {"PL", 24, 0}}
	x := pick(r, cs)
	var b strings.Builder
	for i := 0; i < x.bban; i++ {
		if i < x.alpha {
			b.WriteByte(byte('A' + r.IntN(26)))
		} else {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	bban := b.String()
	// check digits: 98 - (bban + cc + "00") mod 97
	rem := 0
	for _, ch := range bban + x.cc + "00" {
		if ch >= 'A' && ch <= 'Z' {
			v := int(ch-'A') + 10
			rem = (rem*100 + v) % 97
		} else {
			rem = (rem*10 + int(ch-'0')) % 97
		}
	}
	iban := fmt.Sprintf("%s%02d%s", x.cc, 98-rem, bban)
	if r.IntN(2) == 0 {
		return iban
	}
	var parts []string
	for i := 0; i < len(iban); i += 4 {
		parts = append(parts, iban[i:min(len(iban), i+4)])
	}
	return strings.Join(parts, " ")
}

var months = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

func (f *filler) date(birth bool) string {
	r := f.r
	y := 2020 + r.IntN(7)
	if birth {
		y = 1940 + r.IntN(65)
	}
	m, d := 1+r.IntN(12), 1+r.IntN(28)
	switch r.IntN(6) {
	case 0:
		return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
	case 1:
		return fmt.Sprintf("%02d/%02d/%04d", m, d, y)
	case 2:
		return fmt.Sprintf("%02d.%02d.%04d", d, m, y)
	case 3:
		return fmt.Sprintf("%s %d, %d", months[m-1], d, y)
	case 4:
		return fmt.Sprintf("%d %s %d", d, months[m-1], y)
	default:
		return fmt.Sprintf("%d/%d/%d", d, m, y)
	}
}

func (f *filler) address() string {
	r := f.r
	l := f.loc
	root := pick(r, l.streetRoots)
	city := pick(r, l.cities)
	switch l.code {
	case "de-DE":
		return fmt.Sprintf("%s%s %d, %05d %s", root, pick(r, []string{"straße", "weg", "allee"}), 1+r.IntN(120), 10000+r.IntN(89999), city)
	case "fr-FR":
		return fmt.Sprintf("%d %s des %s, %05d %s", 1+r.IntN(90), pick(r, []string{"rue", "avenue", "allée"}), root, 10000+r.IntN(89999), city)
	case "es-ES":
		return fmt.Sprintf("Calle de los %s %d, %05d %s", root, 1+r.IntN(90), 10000+r.IntN(40000), city)
	case "en-GB":
		return fmt.Sprintf("%d %s %s, %s %s%d %d%c%c", 1+r.IntN(200), root, pick(r, []string{"Road", "Lane", "Close", "Street"}), city,
			pick(r, []string{"HG", "CA", "TR", "SY"}), 1+r.IntN(9), 1+r.IntN(9), 'A'+rune(r.IntN(26)), 'A'+rune(r.IntN(26)))
	}
	unit := ""
	if r.IntN(3) == 0 {
		unit = fmt.Sprintf(", Apt %d%c", 1+r.IntN(30), 'A'+rune(r.IntN(4)))
	}
	return fmt.Sprintf("%d %s %s%s, %s, %s %05d", 10+r.IntN(9000), root, pick(r, streetTypesUS), unit, city,
		pick(r, []string{"WA", "ID", "MN", "GA", "NY", "MT", "AZ", "NC", "VT"}), 10000+r.IntN(89999))
}

func randString(r *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper2 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	hexa   = "0123456789abcdef"
)

func (f *filler) jwt() string {
	r := f.r
	enc := base64.RawURLEncoding
	h := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	p := enc.EncodeToString([]byte(fmt.Sprintf(`{"sub":"%d","iat":%d}`, r.IntN(1e6), 1700000000+r.IntN(1e7))))
	return h + "." + p + "." + randString(r, alnum+"-_", 43)
}

func (f *filler) pem() string {
	r := f.r
	var lines []string
	for i := 0; i < 6; i++ {
		lines = append(lines, randString(r, alnum+"+/", 64))
	}
	kind := pick(r, []string{"RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"})
	return "-----BEGIN " + kind + "-----\n" + strings.Join(lines, "\n") + "\n-----END " + kind + "-----"
}

// value fills one slot: its text and its PII type ("" for none).
func (f *filler) value(slot string) (string, redact.Type) {
	r := f.r
	p, q := f.p[0], f.p[1]
	switch slot {
	case "NAME":
		if r.IntN(6) == 0 {
			return p.first + " " + string(p.last[0]) + ". " + p.last, redact.Name
		}
		return p.first + " " + p.last, redact.Name
	case "NAME_UP":
		return strings.ToUpper(p.first + " " + p.last), redact.Name
	case "NAME2":
		return q.first + " " + q.last, redact.Name
	case "FIRST":
		return p.first, redact.Name
	case "LAST":
		return p.last, redact.Name
	case "FIRST2":
		return q.first, redact.Name
	case "TITLE":
		return pick(r, []string{"Dr.", "Mr.", "Ms.", "Mrs.", "Dr"}), ""
	case "EMAIL":
		local := strings.ToLower(asciiFold(p.first) + pick(r, []string{".", "_", ""}) + asciiFold(p.last))
		if r.IntN(3) == 0 {
			local = strings.ToLower(asciiFold(p.first)[:1] + asciiFold(p.last) + fmt.Sprint(r.IntN(99)))
		}
		return local + "@" + pick(r, domains), redact.Email
	case "PHONE":
		return f.phone(), redact.Phone
	case "CC":
		return f.card(), redact.Card
	case "SSN":
		return f.ssn(), redact.SSN
	case "IBAN":
		return f.iban(), redact.Account
	case "ACCT":
		return digits(r, pick(r, []string{"########", "##########", "####-######", "############"})), redact.Account
	case "URL":
		return pick(r, []string{"https://", "http://", "https://www.", "www."}) + pick(r, domains) +
			pick(r, []string{"/account/reset?token=" + randString(r, alnum, 12), "/orders/" + digits(r, "#####"), "/help", "/p/" + randString(r, alnum, 6), ""}), redact.URL
	case "DATE":
		return f.date(false), redact.Date
	case "DOB":
		return f.date(true), redact.DOB
	case "MRN":
		return digits(r, pick(r, []string{"########", "MR-#######", "#######", "H########"})), redact.MRN
	case "ADDR":
		return f.address(), redact.Address
	case "AWS":
		return "AKIA" + randString(r, upper2, 16), redact.Secret
	case "GHTOKEN":
		return "ghp_" + randString(r, alnum, 36), redact.Secret
	case "SLACK":
		return "xoxb-" + digits(r, "###########-#############-") + randString(r, alnum, 24), redact.Secret
	case "STRIPE":
		return "sk_live_" + randString(r, alnum, 24), redact.Secret
	case "OPENAI":
		return "sk-proj-" + randString(r, alnum+"_-", 48), redact.Secret
	case "JWT":
		return f.jwt(), redact.Secret
	case "PEM":
		return f.pem(), redact.Secret
	case "CONN":
		return pick(r, []string{"postgres", "mysql", "mongodb", "redis"}) + "://" + strings.ToLower(asciiFold(q.first)) + ":" +
			randString(r, alnum, 14) + "@db-" + digits(r, "##") + ".internal:5432/app", redact.Secret
	case "PASSWORD":
		return randString(r, alnum+"!#%^&", 10+r.IntN(10)), redact.Secret
	case "ORGMAIL":
		return pick(r, []string{"support", "billing", "help", "accounts"}) + "@" + pick(r, domains), redact.Email
	case "APIURL":
		return "https://api." + pick(r, domains) + "/v1/me", redact.URL
	case "DOMAIN":
		return pick(r, domains), ""
	case "CITY":
		return pick(r, f.loc.cities), ""
	case "ORDER":
		return pick(r, []string{"ORD-", "INV-", "#", "TK-", ""}) + digits(r, pick(r, []string{"######", "########", "2026-#####"})), ""
	case "TRACK":
		return "1Z" + randString(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 16), ""
	case "UUID":
		return randString(r, hexa, 8) + "-" + randString(r, hexa, 4) + "-4" + randString(r, hexa, 3) + "-a" + randString(r, hexa, 3) + "-" + randString(r, hexa, 12), ""
	case "HEX":
		return randString(r, hexa, pick(r, []int{7, 12, 32, 40, 64})), ""
	case "IP":
		return fmt.Sprintf("10.%d.%d.%d", r.IntN(256), r.IntN(256), r.IntN(256)), ""
	case "AMOUNT":
		return pick(r, []string{"$", "€", "£", ""}) + fmt.Sprintf("%d.%02d", r.IntN(5000), r.IntN(100)), ""
	case "N":
		return fmt.Sprint(r.IntN(500)), ""
	case "TIME":
		return fmt.Sprintf("%d:%02d", 1+r.IntN(12), r.IntN(60)), ""
	case "VERSION":
		return fmt.Sprintf("v%d.%d.%d", r.IntN(5), r.IntN(20), r.IntN(40)), ""
	case "TS":
		return fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02d.%03dZ", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000)), ""
	}
	panic("unknown slot " + slot)
}

// memoised slots: a slot's value repeats within a record.
var stable = map[string]bool{"NAME": true, "NAME2": true, "EMAIL": true, "PHONE": true, "ADDR": true, "NAME_UP": true}

func asciiFold(s string) string {
	repl := strings.NewReplacer("ä", "ae", "ö", "oe", "ü", "ue", "ß", "ss", "é", "e", "è", "e", "ë", "e", "ê", "e",
		"á", "a", "à", "a", "â", "a", "ã", "a", "í", "i", "ï", "i", "ó", "o", "ô", "o", "õ", "o", "ú", "u", "ñ", "n",
		"ç", "c", "ł", "l", "ń", "n", "ś", "s", "ź", "z", "ż", "z", "ą", "a", "ę", "e", "ć", "c", "ø", "o", "Ø", "O",
		"É", "E", "Á", "A", "Ó", "O", "Ś", "S", "Ż", "Z", "Ł", "L", "'", "", "’", "", "-", "")
	return repl.Replace(s)
}

// fill renders a template and labels its slots.
func (f *filler) fill(tpl string, rec *Record) {
	var b strings.Builder
	b.WriteString(rec.Text)
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			b.WriteString(tpl)
			break
		}
		j := strings.IndexByte(tpl[i:], '}')
		if j < 0 || strings.ContainsAny(tpl[i+1:i+j], " \"':{") || j == 1 {
			b.WriteString(tpl[:i+1])
			tpl = tpl[i+1:]
			continue
		}
		slot := tpl[i+1 : i+j]
		b.WriteString(tpl[:i])
		tpl = tpl[i+j+1:]
		var v string
		var t redact.Type
		if m, ok := f.memo[slot]; ok && stable[slot] {
			v, t = m, typeOf(slot)
		} else {
			v, t = f.value(slot)
			f.memo[slot] = v
		}
		start := utf8.RuneCountInString(b.String())
		b.WriteString(v)
		if t != "" {
			rec.Spans = append(rec.Spans, Span{Type: t, Start: start, End: start + utf8.RuneCountInString(v), Slot: slot})
		}
	}
	rec.Text = b.String()
	rec.Spans = mergeNames(rec.Spans)
}

// mergeNames: a full name written as {FIRST} {LAST} is one NAME span,
// as Presidio labels a PERSON.
func mergeNames(sp []Span) []Span {
	var out []Span
	for _, s := range sp {
		if n := len(out); n > 0 && s.Type == redact.Name && out[n-1].Type == redact.Name && out[n-1].End+1 == s.Start {
			out[n-1].End = s.End
			out[n-1].Slot += "+" + s.Slot
			continue
		}
		out = append(out, s)
	}
	return out
}

func typeOf(slot string) redact.Type {
	switch slot {
	case "NAME", "NAME2", "NAME_UP":
		return redact.Name
	case "EMAIL":
		return redact.Email
	case "PHONE":
		return redact.Phone
	case "ADDR":
		return redact.Address
	}
	return ""
}

// Generate makes n PII records and nClean clean ones from seed.
// Templates alternate between the dev and test splits.
func Generate(seed uint64, n, nClean int) []Record {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	domainsList := make([]string, 0, len(templates))
	for d := range templates {
		domainsList = append(domainsList, d)
	}
	sort.Strings(domainsList)
	var out []Record
	for k := 0; k < n; k++ {
		d := domainsList[k%len(domainsList)]
		split := []string{"dev", "test"}[(k/len(domainsList))%2]
		var pool []string
		for i, t := range templates[d] {
			if (i%2 == 0) == (split == "dev") {
				pool = append(pool, t)
			}
		}
		loc := locales[r.IntN(len(locales))]
		f := &filler{r: r, loc: loc, memo: map[string]string{}}
		f.p = [2]person{f.person(loc), f.person(loc)}
		rec := Record{Domain: d, Locale: loc.code, Split: split}
		parts := 1
		if d == "chat" || d == "log" || d == "ticket" {
			parts = 1 + r.IntN(3)
		}
		for p := 0; p < parts; p++ {
			if p > 0 {
				rec.Text += "\n"
			}
			f.fill(pick(r, pool), &rec)
		}
		out = append(out, rec)
	}
	for k := 0; k < nClean; k++ {
		split := []string{"dev", "test"}[k%2]
		var pool []string
		for i, t := range cleanTemplates {
			if (i%2 == 0) == (split == "dev") {
				pool = append(pool, t)
			}
		}
		f := &filler{r: r, loc: locales[0], memo: map[string]string{}}
		rec := Record{Domain: "clean", Locale: "none", Split: split}
		for p := 0; p < 1+r.IntN(4); p++ {
			if p > 0 {
				rec.Text += "\n"
			}
			f.fill(pick(r, pool), &rec)
		}
		out = append(out, rec)
	}
	return out
}
