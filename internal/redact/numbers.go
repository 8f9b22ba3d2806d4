package redact

import (
	"slices"
	"sort"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// numbers walks every run of digits and separators once and asks the
// validating recognizers what it is: a date, an SSN, a card, a phone
// number, an account number. A run that is none of them whole is split at
// its spaces and the pieces tried again.
func (sc *scanner) numbers() {
	t := sc.text
	// digits inside an email, URL, secret or IBAN found already are theirs
	cov := sc.cov[:0]
	for _, sp := range sc.spans {
		cov = append(cov, [2]int{sp.s, sp.e})
	}
	slices.SortFunc(cov, func(a, b [2]int) int { return a[0] - b[0] })
	sc.cov = cov
	ci := 0
	for i := 0; i < len(t); {
		c := t[i]
		start := -1
		switch {
		case isDigit(c):
			start = i
		case (c == '+' || c == '(') && i+1 < len(t) && isDigit(t[i+1]):
			start = i
		}
		if start < 0 {
			i++
			continue
		}
		for ci < len(cov) && cov[ci][1] <= start {
			ci++
		}
		if ci < len(cov) && cov[ci][0] <= start {
			i = max(cov[ci][1], start+1)
			continue
		}
		// Inside an identifier (INV12345, x86, a1b2-…, v1.2.3): skip the token.
		if start > 0 && (isAlnum(t[start-1]) || t[start-1] == '_' || t[start-1] >= 0x80 ||
			((t[start-1] == '-' || t[start-1] == '.' || t[start-1] == '/') && start > 1 && isAlnum(t[start-2]))) {
			i = max(skipToken(t, start), start+1)
			continue
		}
		e := start + 1
		for e < len(t) {
			if isDigit(t[e]) {
				e++
				continue
			}
			// up to two separator bytes between digit groups: "-", " ", ". ", ") "
			k := e
			for k < len(t) && k-e < 2 && isNumSep(t[k]) {
				k++
			}
			if k > e && k < len(t) && (isDigit(t[k]) || (t[k] == '(' && k+1 < len(t) && isDigit(t[k+1]))) {
				e = k
				continue
			}
			break
		}
		if t[start] == '(' {
			if strings.IndexByte(t[start:e], ')') < 0 {
				start++
			}
		}
		// Followed by a letter or an identifier joint: an id like 12ab or 1234-abcd.
		if e < len(t) && (isAlnum(t[e]) || t[e] == '_' ||
			((t[e] == '-' || t[e] == '_' || t[e] == '/') && e+1 < len(t) && isAlnum(t[e+1]))) {
			i = skipToken(t, e)
			continue
		}
		if isTimestamp(t, e) || isIPv4(t[start:e]) {
			i = e
			continue
		}
		sc.classifyRun(start, e)
		i = e
	}
}

func skipToken(t string, i int) int {
	for i < len(t) && (isWordByte(t[i]) || t[i] == '-' || t[i] == '.' || t[i] == '/' || t[i] == ':' || t[i] == '=') {
		i++
	}
	return i
}

func isNumSep(c byte) bool {
	return c == ' ' || c == '-' || c == '.' || c == '/' || c == '(' || c == ')'
}

// isTimestamp: a date directly followed by a clock time is log metadata,
// not a person's date.
func isTimestamp(t string, e int) bool {
	if e+5 < len(t) && (t[e] == 'T' || t[e] == ' ') && isDigit(t[e+1]) && isDigit(t[e+2]) && t[e+3] == ':' && isDigit(t[e+4]) {
		return true
	}
	return false
}

// classifyRun tries the run whole, then its space-separated pieces.
func (sc *scanner) classifyRun(s, e int) {
	sc.runStart, sc.runEnd = s, e
	if sc.classify(s, e, true) {
		return
	}
	t := sc.text
	// a number with a country code or an area code in brackets that is not
	// a valid phone number as a whole is not one in parts either
	// and pieces of a longer run are phones only after a phone cue
	phones := t[s] != '+' && t[s] != '(' && sc.near(kwPhone, s, 40)
	if t[s] == '(' {
		s++
	}
	// Split at spaces (at most 8 pieces): the longest prefix that classifies wins.
	var cuts []int
	for k := s; k < e; k++ {
		if t[k] == ' ' && k > s && t[k-1] != ' ' {
			cuts = append(cuts, k)
			if len(cuts) > 8 {
				return
			}
		}
	}
	if len(cuts) == 0 {
		return
	}
	p := s
	for p < e {
		found := false
		for j := len(cuts) - 1; j >= -1; j-- {
			var end int
			if j == -1 {
				break
			}
			end = cuts[j]
			if end <= p {
				break
			}
			if sc.classify(p, end, phones) {
				p = end
				found = true
				break
			}
		}
		if !found {
			// try the rest whole once, then drop the first piece
			if p != s && sc.classify(p, e, phones) {
				return
			}
			nx := -1
			for _, c := range cuts {
				if c > p {
					nx = c
					break
				}
			}
			if nx < 0 {
				return
			}
			p = nx
		}
		for p < e && t[p] == ' ' {
			p++
		}
	}
}

// classify records what t[s:e] is, if anything.
func (sc *scanner) classify(s, e int, phones bool) bool {
	t := sc.text
	raw := t[s:e]
	var dbuf [40]byte
	digits := dbuf[:0]
	var seps [4]byte // distinct separators seen
	nsep := 0
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if isDigit(c) {
			if len(digits) == cap(dbuf) {
				return false
			}
			digits = append(digits, c)
			continue
		}
		known := false
		for x := 0; x < nsep; x++ {
			if seps[x] == c {
				known = true
			}
		}
		if !known && nsep < len(seps) {
			seps[nsep] = c
			nsep++
		}
	}
	n := len(digits)
	if n < 4 {
		return false
	}
	// Dates first: 1985-03-12, 12/03/1985, 12.03.85.
	if (sc.want(Date) || sc.want(DOB)) && n >= 4 && n <= 8 && raw[0] != '+' && raw[0] != '(' {
		if ok := parseNumericDate(raw); ok {
			sc.addDate(s, e, 0.85, "date")
			return true
		}
	}
	ctx := func(k kwKind, w int) bool { return sc.near(k, s, w) }
	// SSN: 123-45-6789 (consistent separators) or 9 bare digits after an SSN cue.
	if n == 9 && sc.want(SSN) {
		formatted := len(raw) == 11 && (raw[3] == '-' || raw[3] == ' ') && raw[6] == raw[3] && nsep == 1
		if (formatted || (len(raw) == 9 && ctx(kwSSN, 40))) && validSSN(digits) {
			score := 0.85
			if ctx(kwSSN, 40) {
				score = 1
			}
			// a formatted 9-digit number after a phone cue is no SSN
			if !(ctx(kwPhone, 24) && !ctx(kwSSN, 40)) {
				sc.add(SSN, s, e, score, "ssn", 2)
				return true
			}
		}
	}
	// Cards: 13–19 digits, groups of one separator, Luhn and issuer.
	// (a piece of a longer run of digits is never a card)
	if n >= 12 && n <= 19 && sc.want(Card) && (s == sc.runStart && e == sc.runEnd) && nsep <= 1 && (nsep == 0 || seps[0] == ' ' || seps[0] == '-') && raw[0] != '+' && raw[0] != '(' {
		if luhn(digits) && issuer(digits) && (n >= 13 || ctx(kwCard, 40)) {
			sc.add(Card, s, e, 1, "card-luhn", 2)
			return true
		}
	}
	// Routing numbers (ABA checksum) after a routing cue.
	if n == 9 && len(raw) == 9 && sc.want(Account) && sc.cueFor(kwRouting, s, 40) && abaValid(digits) {
		sc.add(Account, s, e, 0.9, "aba-routing", 2)
		return true
	}
	acct := n >= 6 && n <= 17 && sc.want(Account) && (nsep == 0 || (nsep == 1 && (seps[0] == '-' || seps[0] == ' '))) &&
		raw[0] != '+' && raw[0] != '(' && (sc.cueFor(kwAccount, s, 40) || sc.cueFor(kwRouting, s, 40)) && !sc.nearerPhoneCue(s)
	if acct {
		sc.add(Account, s, e, 0.8, "account-context", 1)
		return true
	}
	// Phones.
	if phones && n >= 7 && n <= 15 && sc.want(Phone) {
		if sc.phone(raw, n, nsep, ctx(kwPhone, 40)) {
			sc.add(Phone, s, e, 0.9, "phone", 1)
			return true
		}
	}
	return false
}

// phone validates a candidate with libphonenumber's metadata. Bare digit
// strings (no +, no separators) need a phone cue: order ids are bare too.
func (sc *scanner) phone(raw string, n, nsep int, cue bool) bool {
	if raw[0] == '+' {
		num, err := phonenumbers.Parse(raw, "ZZ")
		return err == nil && phonenumbers.IsValidNumber(num)
	}
	if nsep == 0 && !cue {
		return false
	}
	if nsep > 0 && !cue && !phoneShape(raw) {
		return false
	}
	// 123-45-6789 is shaped like an SSN, not a phone number
	if !cue && len(raw) == 11 && raw[3] == '-' && raw[6] == '-' {
		return false
	}
	regions := phoneRegionsIntl
	if raw[0] == '0' && len(raw) > 1 && raw[1] == '0' {
		num, err := phonenumbers.Parse("+"+strings.TrimLeft(raw, "0"), "ZZ")
		return err == nil && phonenumbers.IsValidNumber(num)
	}
	if raw[0] != '0' {
		regions = phoneRegionsNat
	}
	for _, r := range regions {
		num, err := phonenumbers.Parse(raw, r)
		if err == nil && phonenumbers.IsValidNumberForRegion(num, r) {
			return true
		}
	}
	return false
}

// Trunk-prefix countries (national numbers start with 0) and the others.
var (
	phoneRegionsIntl = []string{"GB", "DE", "FR", "IT", "NL", "AU", "IN", "BR", "JP", "CH", "AT", "BE", "SE", "IE", "NZ", "ZA", "NG", "TR"}
	phoneRegionsNat  = []string{"US", "CA", "BR", "IN", "ES", "PT", "PL", "CN", "MX", "DK", "NO", "IT"}
)

// phoneShape: digit groups of telephone sizes (2–5 digits each, 3+ groups,
// or the NANP 3-3-4).
func phoneShape(raw string) bool {
	groups, cur, maxg := 0, 0, 0
	for k := 0; k < len(raw); k++ {
		if isDigit(raw[k]) {
			cur++
			continue
		}
		if cur > 0 {
			groups++
			maxg = max(maxg, cur)
			cur = 0
		}
	}
	if cur > 0 {
		groups++
		maxg = max(maxg, cur)
	}
	if strings.IndexByte(raw, '/') >= 0 && !strings.Contains(raw, ")") {
		// 12/34/5678 reads as a date or a fraction, not a phone number
		return false
	}
	return groups >= 2 && maxg <= 8
}

func validSSN(d []byte) bool {
	area := string(d[0:3])
	if area == "000" || area == "666" || d[0] == '9' {
		return false
	}
	if string(d[3:5]) == "00" || string(d[5:9]) == "0000" {
		return false
	}
	// all one digit, and the numbers used in advertising
	same := true
	for _, c := range d {
		if c != d[0] {
			same = false
		}
	}
	switch string(d) {
	case "123456789", "078051120", "219099999":
		return false
	}
	return !same
}

func luhn(d []byte) bool {
	sum := 0
	dbl := false
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
	return sum%10 == 0
}

// issuer checks the prefix and length of the card networks.
func issuer(d []byte) bool {
	n := len(d)
	p := func(k int) int {
		v := 0
		for i := 0; i < k && i < n; i++ {
			v = v*10 + int(d[i]-'0')
		}
		return v
	}
	switch {
	case d[0] == '4':
		return n == 13 || n == 16 || n == 19 // Visa
	case p(2) >= 51 && p(2) <= 55, p(4) >= 2221 && p(4) <= 2720:
		return n == 16 // Mastercard
	case p(2) == 34 || p(2) == 37:
		return n == 15 // Amex
	case p(4) == 6011 || p(2) == 65 || (p(3) >= 644 && p(3) <= 649) || (p(6) >= 622126 && p(6) <= 622925):
		return n >= 16 && n <= 19 // Discover
	case p(4) >= 3528 && p(4) <= 3589:
		return n >= 16 && n <= 19 // JCB
	case (p(3) >= 300 && p(3) <= 305) || p(2) == 36 || p(2) == 38 || p(2) == 39:
		return n >= 14 && n <= 19 // Diners
	case p(2) == 62:
		return n >= 16 && n <= 19 // UnionPay
	case p(2) == 50 || (p(2) >= 56 && p(2) <= 69):
		return n >= 12 && n <= 19 // Maestro
	}
	return false
}

func abaValid(d []byte) bool {
	w := [9]int{3, 7, 1, 3, 7, 1, 3, 7, 1}
	sum := 0
	for i := 0; i < 9; i++ {
		sum += int(d[i]-'0') * w[i]
	}
	return sum%10 == 0 && sum != 0
}

// parseNumericDate accepts y-m-d, d/m/y, m/d/y, d.m.y with one kind of
// separator, a real month and day, and a year of 1900–2099 (or two digits).
func parseNumericDate(raw string) bool {
	var parts [3]string
	sep := byte(0)
	np := 0
	last := 0
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if isDigit(c) {
			continue
		}
		if c != '-' && c != '/' && c != '.' {
			return false
		}
		if sep == 0 {
			sep = c
		} else if c != sep {
			return false
		}
		if np == 2 {
			return false
		}
		parts[np] = raw[last:k]
		np++
		last = k + 1
	}
	if np != 2 {
		return false
	}
	parts[2] = raw[last:]
	num := func(s string) int {
		v := 0
		for k := 0; k < len(s); k++ {
			v = v*10 + int(s[k]-'0')
		}
		return v
	}
	a, b, c := parts[0], parts[1], parts[2]
	if len(b) < 1 || len(b) > 2 {
		return false
	}
	year := 2000 // a leap year: 29 February passes when the year is not known
	okDM := func(d, m int) bool { return m >= 1 && m <= 12 && d >= 1 && d <= daysIn(m, year) }
	if len(a) == 4 { // y-m-d
		year = num(a)
		return year >= 1900 && year <= 2099 && len(c) <= 2 && len(c) >= 1 && okDM(num(c), num(b))
	}
	if len(a) > 2 || len(a) < 1 {
		return false
	}
	switch len(c) {
	case 4:
		year = num(c)
		if year < 1900 || year > 2099 {
			return false
		}
	case 2:
		if sep == '-' && len(a) == 1 {
			return false
		}
	default:
		return false
	}
	x, y := num(a), num(b)
	return okDM(x, y) || okDM(y, x)
}

func (sc *scanner) addDate(s, e int, score float64, rec string) {
	if sc.birthBefore(s) {
		if sc.want(DOB) {
			sc.add(DOB, s, e, 0.95, rec+"+birth-context", 2)
		}
		return
	}
	if sc.want(Date) {
		sc.add(Date, s, e, score, rec, 0)
	}
}

// monthDates: "March 3, 1985", "3 March 1985", "3rd of March", "12-Mar-1985",
// "le 3 mars 1985", "3. März 1985", "3 de marzo de 1985".
func (sc *scanner) monthDates() {
	t := sc.text
	for _, h := range sc.hits[kwMonth] {
		word := t[h.s:h.e]
		// "may", "mar", "sun"-like words count only capitalised or with digits on both sides
		if (word == "may" || word == "mars" || word == "mai" || word == "march") && !isUpper(t[h.s]) {
			continue
		}
		s, e := h.s, h.e
		// after: ".", spaces/commas/dashes, day, ordinal, comma, year
		p := e
		if p < len(t) && t[p] == '.' {
			p++
		}
		dayAfter, yearAfter := 0, 0
		q := skipSep(t, p)
		if d, q2 := readDigits(t, q, 2); d > 0 && !(q2 < len(t) && isDigit(t[q2])) {
			q2 = skipOrdinal(t, q2)
			dayAfter = q2
			q = skipSep(t, q2)
		}
		if y, q2 := readDigits(t, q, 4); y > 0 && q2-q == 4 && y >= 1900 && y <= 2099 {
			yearAfter = q2
		} else if strings.HasPrefix(t[q:], "de ") {
			if y, q3 := readDigits(t, q+3, 4); y >= 1900 && q3-q-3 == 4 {
				yearAfter = q3
			}
		}
		// before: day (+ ordinal, "of", ".", "de")
		dayBefore := -1
		b := s
		for _, pre := range []string{"of ", "de ", "di "} {
			if b >= len(pre) && strings.EqualFold(t[b-len(pre):b], pre) {
				b -= len(pre)
				break
			}
		}
		b0 := b
		for b > 0 && (t[b-1] == ' ' || t[b-1] == '-' || t[b-1] == '.') && b0-b < 2 {
			b--
		}
		for _, o := range []string{"st", "nd", "rd", "th", "er", "º"} {
			if b >= len(o) && t[b-len(o):b] == o {
				b -= len(o)
				break
			}
		}
		if b > 0 && isDigit(t[b-1]) {
			k := b - 1
			for k > 0 && isDigit(t[k-1]) && b-k < 2 {
				k--
			}
			if !(k > 0 && isAlnum(t[k-1])) && b-k <= 2 {
				dayBefore = k
			}
		}
		switch {
		case dayBefore >= 0 && yearAfter > 0:
			sc.addDate(dayBefore, yearAfter, 0.9, "date-month")
		case dayAfter > 0 && yearAfter > 0:
			sc.addDate(s, yearAfter, 0.9, "date-month")
		case dayBefore >= 0 && dayAfter == 0:
			sc.addDate(dayBefore, e, 0.7, "date-month")
		case dayAfter > 0:
			sc.addDate(s, dayAfter, 0.7, "date-month")
		}
	}
}

func skipSep(t string, p int) int {
	for p < len(t) && (t[p] == ' ' || t[p] == ',' || t[p] == '-') {
		p++
	}
	return p
}

func skipOrdinal(t string, p int) int {
	for _, o := range []string{"st", "nd", "rd", "th"} {
		if strings.HasPrefix(t[p:], o) && !(p+2 < len(t) && isAlnum(t[p+2])) {
			return p + 2
		}
	}
	return p
}

func readDigits(t string, p, maxN int) (int, int) {
	v, k := 0, p
	for k < len(t) && isDigit(t[k]) && k-p < maxN {
		v = v*10 + int(t[k]-'0')
		k++
	}
	if k == p || (k < len(t) && isAlnum(t[k]) && !(k+1 < len(t) && (t[k:k+2] == "st" || t[k:k+2] == "nd" || t[k:k+2] == "rd" || t[k:k+2] == "th"))) {
		return 0, p
	}
	return v, k
}

// ibans: two capitals, two check digits, then BBAN groups; the country's
// length and the mod-97 check must hold.
func (sc *scanner) ibans() {
	t := sc.text
	for i := 0; i+15 < len(t); i++ {
		if !isUpper(t[i]) || !isUpper(t[i+1]) || !isDigit(t[i+2]) || !isDigit(t[i+3]) || (i > 0 && isWordByte(t[i-1])) {
			continue
		}
		want, ok := ibanLength[t[i:i+2]]
		if !ok {
			continue
		}
		var buf [34]byte
		n := 0
		e := i
		k := i
		for k < len(t) && n < want {
			c := t[k]
			if isDigit(c) || isUpper(c) {
				buf[n] = c
				n++
				k++
				e = k
				continue
			}
			if c == ' ' && k+1 < len(t) && isAlnum(t[k+1]) {
				k++
				continue
			}
			break
		}
		if n != want || (e < len(t) && isAlnum(t[e])) {
			continue
		}
		if mod97(buf[:n]) {
			sc.add(Account, i, e, 1, "iban-mod97", 2)
			i = e
		}
	}
}

func mod97(b []byte) bool {
	r := 0
	step := func(c byte) {
		if isDigit(c) {
			r = (r*10 + int(c-'0')) % 97
		} else {
			v := int(c-'A') + 10
			r = (r*100 + v) % 97
		}
	}
	for _, c := range b[4:] {
		step(c)
	}
	for _, c := range b[:4] {
		step(c)
	}
	return r == 1
}

// ibanLength: the IBAN registry's lengths by country.
var ibanLength = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
	"RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// birthBefore: a birth cue ends at most 40 bytes before s, on the same
// line, with no other number between them (that number would be the
// birth date).
func (sc *scanner) birthBefore(s int) bool {
	hs := sc.hits[kwBirth]
	i := sort.Search(len(hs), func(i int) bool { return hs[i].e > s })
	if i == 0 {
		return false
	}
	h := hs[i-1]
	if s-h.e > 40 {
		return false
	}
	for k := h.e; k < s; k++ {
		if isDigit(sc.text[k]) || sc.text[k] == '\n' {
			return false
		}
	}
	return true
}

// isIPv4: four dot-separated groups of 1–3 digits (an address, not a
// phone number or a date).
func isIPv4(s string) bool {
	groups, n := 0, 0
	for k := 0; k < len(s); k++ {
		switch {
		case isDigit(s[k]):
			n++
			if n > 3 {
				return false
			}
		case s[k] == '.' && n > 0:
			groups++
			n = 0
		default:
			return false
		}
	}
	return groups == 3 && n > 0
}

// nearerPhoneCue: the closest cue before s is a phone cue, not an account one.
func (sc *scanner) nearerPhoneCue(s int) bool {
	last := func(k kwKind) int {
		hs := sc.hits[k]
		i := sort.Search(len(hs), func(i int) bool { return hs[i].e > s })
		if i == 0 {
			return -1
		}
		return hs[i-1].e
	}
	p := last(kwPhone)
	return p >= 0 && s-p <= 40 && p > last(kwAccount) && p > last(kwRouting)
}

// cueFor: a cue of kind ends at most window bytes before s on the same
// line with no other number between (that number is the one it names).
func (sc *scanner) cueFor(kind kwKind, s, window int) bool {
	hs := sc.hits[kind]
	i := sort.Search(len(hs), func(i int) bool { return hs[i].e > s })
	if i == 0 {
		return false
	}
	h := hs[i-1]
	if s-h.e > window {
		return false
	}
	for k := h.e; k < s; k++ {
		if isDigit(sc.text[k]) || sc.text[k] == '\n' {
			return false
		}
	}
	return true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
