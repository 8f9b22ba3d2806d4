package redact

import (
	"regexp"
	"sort"
	"strings"
	"sync"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// One Aho–Corasick pass over the lower-cased text finds every keyword the
// recognizers care about: context words (birth, account, ssn, phone, card,
// mrn), month names, street words and the prefixes of secrets. The costly
// checks (regexes, phone parsing) then run only where a keyword or a
// candidate is, so the cost stays linear in the text.

type kwKind uint8

const (
	kwBirth kwKind = iota
	kwAccount
	kwSSN
	kwPhone
	kwCard
	kwMRN
	kwMonth
	kwStreet
	kwSecret
	kwRouting
	numKinds
)

type keyword struct {
	kind  kwKind
	word  string
	arg   int  // month number, secret rule index
	start bool // must start at a word boundary
	end   bool // must end at a word boundary
}

var monthNames = map[string]int{
	"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
	"september": 9, "october": 10, "november": 11, "december": 12,
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
	// de, fr, es, it, pt
	"januar": 1, "februar": 2, "märz": 3, "maerz": 3, "mai": 5, "juni": 6, "juli": 7, "oktober": 10, "dezember": 12,
	"janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "juin": 6, "juillet": 7, "août": 8, "aout": 8,
	"septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
	"enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7, "agosto": 8,
	"septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12,
	"gennaio": 1, "febbraio": 2, "aprile": 4, "maggio": 5, "giugno": 6, "luglio": 7, "settembre": 9,
	"ottobre": 10, "dicembre": 12,
	"janeiro": 1, "fevereiro": 2, "março": 3, "maio": 5, "junho": 6, "julho": 7, "setembro": 9, "outubro": 10,
	"dezembro": 12,
}

var contextWords = map[kwKind][]string{
	kwBirth: {"dob", "d.o.b", "date of birth", "birth date", "birthdate", "birthday", "born", "b.", "geboren",
		"geburtsdatum", "geb.", "né le", "née le", "né", "née", "date de naissance", "fecha de nacimiento",
		"nacido", "nacida", "f. nac", "data di nascita", "nato il", "nata il", "data de nascimento", "nascido", "age/dob"},
	kwAccount: {"account", "acct", "a/c", "iban", "bank", "konto", "kontonummer", "compte", "cuenta", "conto",
		"sort code", "bsb", "checking", "savings", "beneficiary", "wire", "transfer to", "acc no", "acc#", "acc."},
	kwRouting: {"routing", "aba", "rtn"},
	kwSSN:     {"ssn", "social security", "ss#", "soc sec", "sozialversicherungsnummer", "tax id", "taxpayer"},
	kwPhone: {"phone", "tel", "tel.", "telephone", "mobile", "cell", "call", "fax", "whatsapp", "sms", "text me",
		"handy", "téléphone", "telefon", "teléfono", "telefono", "móvil", "movil", "cellulare", "portable", "ph", "mob", "reach me"},
	kwCard: {"card", "visa", "mastercard", "amex", "credit", "debit", "cc", "karte", "carte", "tarjeta"},
	kwMRN: {"mrn", "medical record", "med rec", "med. rec", "patient id", "patient no", "patient number", "patient #",
		"chart no", "chart #", "chart number", "hospital number", "hospital no", "record no", "record number",
		"nhs number", "nhs no", "health record", "ehr", "emr", "case no", "fallnummer", "dossier", "historia clínica", "nhc"},
}

// Address groups: which regex a street word calls, and the cheap check
// that must hold first.
const (
	addrEN = iota // "12 Larkspur Lane": capitalised word, a number before it
	addrDE        // "Lindenhofstraße 12": a number right after
	addrFR        // "12 rue des Lilas": a number right before
	addrES        // "Calle Mayor 5": capitalised, a number after
)

func streetGroup(w string) int {
	switch w {
	case "rue", "chemin", "allée", "allee", "impasse", "quai", "cours", "route", "bd":
		return addrFR
	case "calle", "avenida", "avda", "paseo", "camino", "carrera", "ronda", "c/", "via", "viale", "piazza", "corso",
		"largo", "rua", "travessa":
		return addrES
	case "straat", "laan", "weg", "plein", "gracht":
		return addrDE
	}
	return addrEN
}

var streetWords = []string{
	"street", "st", "avenue", "ave", "road", "rd", "boulevard", "blvd", "lane", "ln", "drive", "dr", "court", "ct",
	"place", "pl", "way", "terrace", "ter", "parkway", "pkwy", "highway", "hwy", "circle", "cir", "square", "sq",
	"trail", "trl", "close", "crescent", "gardens", "grove", "mews", "row", "park", "walk", "loop", "alley", "path",
	"pike", "ridge", "run", "view", "hill", "crossing", "xing", "expressway", "turnpike",
	"rue", "chemin", "allée", "impasse", "quai", "cours", "route", "bd",
	"calle", "avenida", "avda", "paseo", "plaza", "camino", "carrera", "ronda", "c/",
	"via", "viale", "piazza", "corso", "largo", "rua", "travessa",
}

// German compounds: the street word is the end of the street's name.
var streetSuffixes = []string{"straße", "strasse", "str.", "weg", "allee", "platz", "gasse", "ring", "damm", "ufer", "chaussee", "straat", "laan", "gracht", "plein"}

type acTable struct {
	trie *ahocorasick.Trie
	kws  []keyword
}

var table = sync.OnceValue(func() *acTable {
	var kws []keyword
	seen := map[string]bool{}
	add := func(k keyword) {
		// one pattern per word: the trie reports a word once
		if seen[k.word] {
			panic("redact: keyword listed twice: " + k.word)
		}
		seen[k.word] = true
		kws = append(kws, k)
	}
	for kind, words := range contextWords {
		for _, w := range words {
			add(keyword{kind: kind, word: w, start: true, end: !strings.HasSuffix(w, ".")})
		}
	}
	for w, m := range monthNames {
		add(keyword{kind: kwMonth, word: w, arg: m, start: true, end: true})
	}
	for _, w := range streetWords {
		add(keyword{kind: kwStreet, word: w, arg: streetGroup(w), start: true, end: !strings.HasSuffix(w, "/")})
	}
	for _, w := range streetSuffixes {
		add(keyword{kind: kwStreet, word: w, arg: addrDE, start: false, end: !strings.HasSuffix(w, ".")})
	}
	for i, r := range secretRules {
		for _, w := range r.keywords {
			add(keyword{kind: kwSecret, word: w, arg: i, start: r.boundary})
		}
	}
	// Deterministic pattern numbering: sort by word, then kind.
	sort.SliceStable(kws, func(i, j int) bool {
		if kws[i].word != kws[j].word {
			return kws[i].word < kws[j].word
		}
		if kws[i].kind != kws[j].kind {
			return kws[i].kind < kws[j].kind
		}
		return kws[i].arg < kws[j].arg
	})
	b := ahocorasick.NewTrieBuilder()
	for _, k := range kws {
		b.AddString(k.word)
	}
	return &acTable{trie: b.Build(), kws: kws}
})

type hit struct {
	s, e int // byte span in the text
	arg  int
}

// scanner holds one Detect call's state; pooled to keep the hot path free
// of allocations.
type scanner struct {
	text  string
	lower []byte
	types []Type
	mrn   []*regexp.Regexp
	hits  [numKinds][]hit
	spans []span
	words []word
	names nameState
	// v1: rule set 1 (Options.Rules); common: the flags that make a word
	// an ordinary word under the rule set in force
	v1     bool
	common uint8
	// the digit run being classified (numbers.go)
	runStart, runEnd int
	cov              [][2]int
}

var scanners = sync.Pool{New: func() any { return new(scanner) }}

func getScanner(text string) *scanner {
	sc := scanners.Get().(*scanner)
	sc.text = text
	if cap(sc.lower) < len(text) {
		sc.lower = make([]byte, len(text))
	}
	sc.lower = sc.lower[:len(text)]
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 'A' && c <= 'Z' {
			c += 32
		}
		sc.lower[i] = c
	}
	for k := range sc.hits {
		sc.hits[k] = sc.hits[k][:0]
	}
	sc.spans = sc.spans[:0]
	sc.words = sc.words[:0]
	sc.names.reset()
	return sc
}

func putScanner(sc *scanner) {
	if cap(sc.lower) > 1<<16 || cap(sc.spans) > 1<<12 {
		return // do not keep big buffers alive
	}
	sc.text = ""
	sc.types = nil
	sc.mrn = nil
	scanners.Put(sc)
}

func (sc *scanner) want(t Type) bool { return want(sc.types, t) }

func (sc *scanner) add(t Type, s, e int, score float64, rec string, prio int) {
	if s >= e {
		return
	}
	sc.spans = append(sc.spans, span{t: t, s: s, e: e, score: score, recognizer: rec, prio: prio})
}

func (sc *scanner) run() {
	tb := table()
	lower := sc.lower
	tb.trie.Walk(lower, func(end, n, pat int64) bool {
		k := tb.kws[pat]
		s, e := int(end-n+1), int(end+1)
		if k.start && s > 0 && isWordByte(lower[s-1]) {
			return true
		}
		if k.end && e < len(lower) && isWordByte(lower[e]) {
			return true
		}
		sc.hits[k.kind] = append(sc.hits[k.kind], hit{s: s, e: e, arg: k.arg})
		return true
	})
	if sc.want(Email) || sc.want(Name) {
		sc.emails()
	}
	if sc.want(URL) || sc.want(Secret) {
		sc.urls()
	}
	if sc.want(Secret) {
		sc.secrets()
	}
	if sc.want(Account) {
		sc.ibans()
	}
	sc.numbers()
	if sc.want(Date) || sc.want(DOB) {
		sc.monthDates()
	}
	if sc.want(MRN) {
		sc.mrns()
	}
	if sc.want(Address) {
		sc.addresses()
	}
	if sc.want(Name) {
		sc.findNames()
	}
}

// near reports a keyword of kind ending within window bytes before pos
// (or starting within after bytes after end, when after > 0).
func (sc *scanner) near(kind kwKind, pos, window int) bool {
	hs := sc.hits[kind]
	i := sort.Search(len(hs), func(i int) bool { return hs[i].e > pos-window })
	for ; i < len(hs) && hs[i].e <= pos; i++ {
		// context counts on the same line only
		if strings.IndexByte(sc.text[hs[i].e:pos], '\n') < 0 {
			return true
		}
	}
	return false
}

func (sc *scanner) nearAfter(kind kwKind, end, window int) bool {
	hs := sc.hits[kind]
	i := sort.Search(len(hs), func(i int) bool { return hs[i].s >= end })
	return i < len(hs) && hs[i].s <= end+window
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || isLower(c) }
