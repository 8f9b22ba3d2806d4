package redact

import (
	"regexp"
	"sync"
)

var defaultMRN = sync.OnceValue(func() []*regexp.Regexp {
	re, err := compileMRN(DefaultMRNFormats)
	if err != nil {
		panic(err)
	}
	return re
})

// mrns: after an MRN cue ("MRN:", "medical record no.", "patient ID #"),
// the next token must fit one of the policy's formats and carry at least
// four digits.
func (sc *scanner) mrns() {
	t := sc.text
	formats := sc.mrn
	if formats == nil {
		formats = defaultMRN()
	}
	for _, h := range sc.hits[kwMRN] {
		p := h.e
		// skip "number", "no.", "#", ":" and spaces
		for k := 0; k < 4 && p < len(t); k++ {
			q := p
			for q < len(t) && (t[q] == ' ' || t[q] == ':' || t[q] == '#' || t[q] == '.' || t[q] == '=' || t[q] == '\t') {
				q++
			}
			for _, w := range []string{"number", "num", "no", "nr", "id", "is"} {
				if len(t)-q > len(w) && equalFoldASCII(t[q:q+len(w)], w) && !isAlnum(t[q+len(w)]) {
					q += len(w)
					break
				}
			}
			if q == p {
				break
			}
			p = q
		}
		if p >= len(t) {
			continue
		}
		tokEnd := p
		for tokEnd < len(t) && (isAlnum(t[tokEnd]) || t[tokEnd] == '-' || t[tokEnd] == '/') {
			tokEnd++
		}
		for tokEnd > p && (t[tokEnd-1] == '-' || t[tokEnd-1] == '/') {
			tokEnd--
		}
		tok := t[p:tokEnd]
		digits := 0
		for k := 0; k < len(tok); k++ {
			if isDigit(tok[k]) {
				digits++
			}
		}
		if digits < 4 {
			continue
		}
		for _, re := range formats {
			if m := re.FindStringIndex(tok); m != nil && m[1] == len(tok) {
				sc.add(MRN, p, tokEnd, 0.9, "mrn-context", 3)
				break
			}
		}
	}
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if isUpper(x) {
			x += 32
		}
		if isUpper(y) {
			y += 32
		}
		if x != y {
			return false
		}
	}
	return true
}

// Street addresses by country. Each regex runs only on a window around a
// street word found by the keyword pass.
var (
	capWord  = `[A-ZÀ-ÖØ-Þ][\p{L}'’-]*`
	unitPart = `(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Flat|Floor|Fl|Rm|Room|Bldg|Building)\b\.?\s*#?\s*[A-Za-z0-9-]{1,6}\b|,?\s+#\s*[A-Za-z0-9-]{1,6})?`
	cityWord = `[A-ZÀ-ÖØ-Þ][\p{Ll}'’-][\p{L}'’-]*`
	postal   = `(?:[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|[A-Z]\d[A-Z]\s?\d[A-Z]\d|\d{5}(?:-\d{4})?)`
	cityPart = `(?:,\s*` + cityWord + `(?:\s` + cityWord + `){0,2}(?:,?\s+` + postal + `|,?\s+[A-Z]{2}(?:,?\s+` + postal + `)?)?)?`
	ukPost   = `(?:,?\s+[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2})?`

	addressREs = []*regexp.Regexp{
		// en: 1600 Pennsylvania Avenue NW, Apt 4B, Springfield, IL 62704 / 10 Downing Street, London SW1A 2AA
		regexp.MustCompile(`\b\d{1,6}[A-Za-z]?(?:-\d{1,4})?\s+(?:(?:` + capWord + `|\d{1,3}(?:st|nd|rd|th))\s+){0,4}` +
			`(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|Terrace|Ter|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Square|Sq|Trail|Trl|Close|Crescent|Gardens|Grove|Mews|Row|Park|Walk|Loop|Alley|Path|Pike|Ridge|Run|View|Hill|Plaza|Crossing|Expressway|Turnpike)\b\.?` +
			`(?:\s+(?:N|S|E|W|NE|NW|SE|SW)\b\.?)?` + unitPart + cityPart + ukPost),
		// de/nl: Hauptstraße 12a, 10115 Berlin / Berliner Straße 5 / Keizersgracht 123
		regexp.MustCompile(`(?:` + capWord + `\s)?[A-ZÄÖÜ][\p{L}-]*(?:straße|strasse|str\.|weg|allee|platz|gasse|ring|damm|ufer|chaussee|straat|laan|gracht|plein|Straße|Strasse|Str\.|Weg|Allee|Platz|Gasse|Ring|Damm)\s+\d{1,4}\s?[a-z]?\b(?:,\s*(?:D-)?\d{4,5}(?:\s?[A-Z]{2})?\s+` + capWord + `(?:[\s-]` + capWord + `)?)?`),
		// fr: 12 bis, rue de la Paix, 75002 Paris
		regexp.MustCompile(`\b\d{1,4}(?:\s?(?:bis|ter))?,?\s+(?i:rue|avenue|av\.|boulevard|bd|chemin|place|allée|impasse|quai|route|cours)\s+(?:(?:de|du|des|la|le|l'|d'|de la)\s*)*` + capWord + `(?:[\s-](?:(?:de|du|des|la|le|l')\s*)*` + capWord + `){0,3}(?:,?\s*\d{5}\s+` + capWord + `(?:[\s-]` + capWord + `)*)?`),
		// es/it/pt: Calle de Alcalá 45, 3º B, 28014 Madrid / Via Roma 10, 00184 Roma / Rua Augusta 100
		regexp.MustCompile(`\b(?:Calle|C/|Avenida|Avda\.?|Av\.|Paseo|Plaza|Pza\.|Camino|Carrera|Ronda|Via|Viale|Piazza|Corso|Largo|Rua|Travessa|Praça)\s+(?:(?:de|del|la|las|los|el|dei|della|delle|da|do|dos)\s+)*` + capWord + `(?:\s+(?:(?:de|del|la|las|los|el|dei|della|delle|da|do|dos)\s+)*` + capWord + `){0,3},?\s+(?:n\.?º\s*)?\d{1,4}(?:,?\s*\d{1,2}º\s*[A-Z]?)?(?:,\s*\d{4,5}(?:-\d{3})?\s+` + capWord + `(?:\s` + capWord + `)?)?`),
	}
)

// anchoredAddress are addressREs anchored at the window's start: the
// structural checks put the window at the building number (or the street
// word) so one anchored attempt replaces a scan of every position.
var anchoredAddress = func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(addressREs))
	for i, re := range addressREs {
		out[i] = regexp.MustCompile(`^(?:` + re.String() + `)`)
	}
	return out
}()

func (sc *scanner) addresses() {
	t := sc.text
	last := -1
	for _, h := range sc.hits[kwStreet] {
		if h.s < last {
			continue
		}
		// cheap structural checks before any regex runs
		var res []*regexp.Regexp
		ws, we := h.s, h.e
		switch h.arg {
		case addrEN:
			d := digitBefore(t, h.s, 80)
			if isUpper(t[h.s]) && d < 0 && digitAfter(t, h.e, 80) >= 0 {
				res = anchoredAddress[3:4] // "Plaza Mayor 5"
				break
			}
			if !isUpper(t[h.s]) || d < 0 {
				if !(h.arg == addrEN && (t[h.s] == 'a' || t[h.s] == 'b' || t[h.s] == 'p') && digitBefore(t, h.s, 12) >= 0) {
					continue
				}
				res = anchoredAddress[2:3] // "12 avenue …", "3 place …" (fr)
				ws = digitBefore(t, h.s, 12)
				break
			}
			res, ws = anchoredAddress[0:1], d
			// the building number starts the window
			for ws > 0 && (isDigit(t[ws-1]) || isUpper(t[ws-1]) || t[ws-1] == '-') {
				ws--
			}
			// "12 avenue …" (fr) reads as an English address too
			if t[h.s] == 'A' || t[h.s] == 'P' || t[h.s] == 'B' {
				res = []*regexp.Regexp{anchoredAddress[0], anchoredAddress[2]}
			}
		case addrDE:
			if digitAfter(t, h.e, 6) < 0 {
				continue
			}
			res = anchoredAddress[1:2]
		case addrFR:
			d := digitBefore(t, h.s, 12)
			if d < 0 {
				continue
			}
			res, ws = anchoredAddress[2:3], d
			for ws > 0 && isDigit(t[ws-1]) {
				ws--
			}
		case addrES:
			if !isUpper(t[h.s]) || digitAfter(t, h.e, 80) < 0 {
				continue
			}
			res = anchoredAddress[3:4]
		}
		starts := [2]int{ws, -1}
		if h.arg == addrDE {
			// the word the suffix ends, or the word before it ("Berliner Straße 5")
			w := h.s
			for w > 0 && (isWordByte(t[w-1]) || t[w-1] == '-') {
				w--
			}
			p := w
			for p > 0 && t[p-1] == ' ' {
				p--
			}
			for p > 0 && isWordByte(t[p-1]) {
				p--
			}
			starts = [2]int{p, w}
			if p == w {
				starts[1] = -1
			}
		}
		we = min(len(t), h.e+160)
		for we < len(t) && we-h.e < 256 && t[we] != '\n' && !isSpace(t[we-1]) {
			we++
		}
		for _, ws := range starts {
			if ws < 0 {
				continue
			}
			win := t[ws:we]
			for _, re := range res {
				m := re.FindStringIndex(win)
				if m == nil {
					continue
				}
				s, e := ws+m[0], ws+m[1]
				if s <= h.s && e >= h.e {
					for e > s && (t[e-1] == ',' || t[e-1] == ' ' || t[e-1] == '.') && !(t[e-1] == '.' && e-2 > s && isLetterAbbrevEnd(t, e-1)) {
						e--
					}
					sc.add(Address, s, e, 0.85, "address", 1)
					if e > last {
						last = e
					}
				}
			}
		}
	}
}

// digitBefore: the position of the last digit in the n bytes before p on
// the same line, or -1.
func digitBefore(t string, p, n int) int {
	for k := p - 1; k >= 0 && p-k <= n && t[k] != '\n'; k-- {
		if isDigit(t[k]) {
			return k
		}
	}
	return -1
}

func digitAfter(t string, p, n int) int {
	for k := p; k < len(t) && k-p < n && t[k] != '\n'; k++ {
		if isDigit(t[k]) {
			return k
		}
	}
	return -1
}

// isLetterAbbrevEnd: the '.' at i ends "St." or "Ave." (keep it).
func isLetterAbbrevEnd(t string, i int) bool {
	j := i
	for j > 0 && isLower(t[j-1]) {
		j--
	}
	return j > 0 && isUpper(t[j-1]) && i-j <= 3 && (j < 2 || t[j-2] == ' ')
}
