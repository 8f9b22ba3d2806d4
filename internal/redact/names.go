package redact

import (
	"bufio"
	"embed"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// NAME without a model: a person's name is recognised from
//   - cues: titles (Mr, Dr, Frau, Mme), greetings and labels ("Dear",
//     "Hi", "my name is", "From:", "Patient:"), closings before a
//     signature line;
//   - the embedded given- and family-name lists (data/*.txt);
//   - the local part of an email address in the same text
//     (zoltan.brekke@… makes "Zoltan Brekke" a name);
//   - the shape of a name: two or three capitalised words none of which is
//     a common word;
//   - re-finding: a word of a name found once is a name everywhere in the
//     text, in any case (so ALL-CAPS headers and lower-case mentions count).
// Negative evidence: the common-word list, log lines (timestamps, levels,
// key=value), tokens glued to digits, dots or underscores (identifiers).

//go:embed data/*.txt
var dataFS embed.FS

const (
	fFirst uint8 = 1 << iota
	fLast
	fAmbig  // a name that is also an ordinary word
	fCommon // an ordinary word
	// fCommon2: an ordinary word of rule set 2 (data/common2.txt)
	fCommon2
)

var lexicon = sync.OnceValue(func() map[string]uint8 {
	m := map[string]uint8{}
	load := func(file string, flag uint8) {
		f, err := dataFS.Open("data/" + file)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			line := s.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			for _, w := range strings.Fields(line) {
				fl := flag
				if strings.HasSuffix(w, "*") {
					w = strings.TrimSuffix(w, "*")
					fl |= fAmbig
				}
				m[w] |= fl
			}
		}
	}
	load("first.txt", fFirst)
	load("last.txt", fLast)
	load("common.txt", fCommon)
	load("common2.txt", fCommon2)
	for w, f := range m {
		if f&(fFirst|fLast) != 0 && f&fCommon != 0 {
			m[w] = f | fAmbig
		}
	}
	return m
})

// NameLists returns the detector's given names, family names and common
// words (lower case), for the evaluation's disjointness test.
func NameLists() (first, last, common []string) {
	for w, f := range lexicon() {
		if f&fFirst != 0 {
			first = append(first, w)
		}
		if f&fLast != 0 {
			last = append(last, w)
		}
		if f&fCommon != 0 {
			common = append(common, w)
		}
	}
	return
}

var titles = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "miss": true, "mx": true, "dr": true, "prof": true, "sir": true, "dame": true,
	"herr": true, "frau": true, "mme": true, "mlle": true, "monsieur": true, "madame": true, "sr": true, "sra": true,
	"srta": true, "señor": true, "señora": true, "signor": true, "signora": true, "sig": true, "dott": true, "doctor": true,
	"nurse": true, "professor": true, "rev": true, "capt": true, "officer": true, "judge": true, "mister": true,
}

// cue words: the next capitalised words are a name.
var cues = map[string]bool{
	"dear": true, "hi": true, "hello": true, "hey": true, "from": true, "to": true, "cc": true, "attn": true,
	"name": true, "patient": true, "contact": true, "customer": true, "caller": true, "client": true, "signed": true,
	"by": true, "with": true, "named": true, "called": true, "thanks": true, "thank": true, "regards": true,
	"is": true, "am": true, "i'm": true, "im": true, "for": true, "ask": true, "pt": true, "member": true,
	"employee": true, "applicant": true, "tenant": true, "guest": true, "passenger": true, "recipient": true,
	"sender": true, "author": true, "owner": true, "user": true, "holder": true, "cardholder": true, "assignee": true,
	"reporter": true, "requester": true, "bonjour": true, "hallo": true, "hola": true, "ciao": true, "olá": true,
	"liebe": true, "lieber": true, "cher": true, "chère": true, "estimado": true, "estimada": true, "querido": true,
	"querida": true, "gentile": true, "caro": true, "cara": true, "son": true, "daughter": true, "wife": true,
	"husband": true, "mother": true, "father": true, "brother": true, "sister": true, "colleague": true, "friend": true,
	"manager": true, "nom": true, "nombre": true, "nome": true, "vorname": true, "nachname": true, "apellido": true,
}

// cues2 are the cues rule set 2 adds.
var cues2 = map[string]bool{
	"ping": true, "hire": true, "attendees": true, "attendee": true, "participants": true, "participant": true,
	"driver": true, "witness": true, "birthday": true, "congratulations": true, "congrats": true, "mom": true,
	"mum": true, "dad": true, "aunt": true, "uncle": true, "partner": true, "boss": true, "neighbour": true,
	"neighbor": true, "landlord": true, "landlady": true, "nephew": true, "niece": true, "cousin": true,
	"grandmother": true, "grandfather": true, "fiancé": true, "fiancée": true, "roommate": true, "coworker": true,
	"teammate": true,
}

// weak cues: "to", "by", "with", "for", "is", "am" only count after the
// word before them sets them up ("spoke to", "reported by", "name is").
var weakCue = map[string]bool{"to": true, "by": true, "with": true, "for": true, "is": true, "am": true, "from": false}

var weakCueLead = map[string]bool{
	"spoke": true, "talked": true, "talk": true, "speak": true, "reported": true, "approved": true, "assigned": true,
	"signed": true, "submitted": true, "requested": true, "written": true, "sent": true, "created": true, "reviewed": true,
	"name": true, "i": true, "this": true, "met": true, "meeting": true, "call": true, "chat": true, "referred": true,
	"seen": true, "treated": true, "examined": true, "ask": true, "contact": true, "forward": true, "escalated": true,
	"married": true, "email": true, "wrote": true, "prescribed": true, "accompanied": true, "dob": true,
}

// weakCueLead2: the leads rule set 2 adds.
var weakCueLead2 = map[string]bool{
	"congratulations": true, "covering": true, "witnessed": true, "introduce": true, "thanks": true,
}

var closings = []string{"regards", "best", "thanks", "thank you", "cheers", "sincerely", "best regards", "kind regards",
	"warm regards", "yours", "mit freundlichen grüßen", "viele grüße", "cordialement", "saludos", "atentamente",
	"un saludo", "cordiali saluti", "atenciosamente", "groeten", "met vriendelijke groet", "love", "thx", "br", "ta"}

var particles = map[string]bool{"van": true, "von": true, "de": true, "da": true, "del": true, "della": true, "di": true,
	"du": true, "le": true, "la": true, "bin": true, "ibn": true, "al": true, "dos": true, "das": true, "ten": true,
	"ter": true, "der": true, "den": true, "y": true, "mac": true, "st.": true}

const (
	shLower = iota
	shCap
	shUpper
	shMixed
	shInitial // "J."
)

type word struct {
	s, e      int
	shape     uint8
	flags     uint8
	lineStart bool // first word of its line
	logLine   bool
	sentStart bool
}

type nameState struct {
	email   map[string]bool // parts of email local parts
	known   map[string]bool // words of names found
	covered []bool          // words already inside a found name
	// anchor: the word is inside a name found on strong evidence (a cue,
	// a list, an email, a verb): only such a name lends itself to words
	// coordinated with it; anchorCue: on a cue ("Attendees: A, B").
	anchor, anchorCue []bool
}

func (n *nameState) reset() {
	clear(n.email)
	clear(n.known)
	n.covered = n.covered[:0]
	n.anchor = n.anchor[:0]
	n.anchorCue = n.anchorCue[:0]
}

func (n *nameState) emailLocal(local string) {
	cut := func(r rune) bool { return r == '.' || r == '_' || r == '-' || r == '+' || (r >= '0' && r <= '9') }
	parts := strings.FieldsFunc(local, cut)
	if len(parts) < 2 && !(len(parts) == 1 && len(parts[0]) >= 4) {
		return
	}
	if n.email == nil {
		n.email = map[string]bool{}
	}
	for _, p := range parts {
		if len(p) >= 3 {
			n.email[strings.ToLower(p)] = true
		}
	}
}

func (sc *scanner) lookup(w string) uint8 {
	var buf [48]byte
	if len(w) <= len(buf) {
		ascii := true
		for i := 0; i < len(w); i++ {
			c := w[i]
			if c >= utf8.RuneSelf {
				ascii = false
				break
			}
			if isUpper(c) {
				c += 32
			}
			buf[i] = c
		}
		if ascii {
			return lexicon()[string(buf[:len(w)])]
		}
	}
	return lexicon()[strings.ToLower(w)]
}

func (sc *scanner) lowerWord(w word) string { return strings.ToLower(sc.text[w.s:w.e]) }

// tokenize fills sc.words with the letter words of the text.
func (sc *scanner) tokenize() {
	t := sc.text
	lineStart, sent := true, true
	logLine := isLogLine(t, 0)
	for i := 0; i < len(t); {
		c := t[i]
		if c == '\n' {
			lineStart, sent = true, true
			logLine = isLogLine(t, i+1)
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(t[i:])
		}
		if !unicode.IsLetter(r) {
			if c == '.' || c == '!' || c == '?' {
				sent = true
			} else if c != ' ' && c != '\t' && c != '"' && c != '(' && c != '\'' && c != '*' && c != '-' {
				sent = sent && (c == ':' || c == '>')
			}
			i += size
			continue
		}
		s := i
		// glued to a digit, underscore, slash, '=' or a dot before: an identifier
		glued := s > 0 && (isDigit(t[s-1]) || t[s-1] == '_' || t[s-1] == '/' || t[s-1] == '=' || t[s-1] == '\\' ||
			(t[s-1] == '.' && s > 1 && isAlnum(t[s-2])) || (t[s-1] == '-' && s > 1 && isAlnum(t[s-2])))
		e := i
		upper, lower := 0, 0
		for e < len(t) {
			r, size := rune(t[e]), 1
			if t[e] >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(t[e:])
			}
			if unicode.IsLetter(r) {
				if unicode.IsUpper(r) {
					upper++
				} else {
					lower++
				}
				e += size
				continue
			}
			// O'Brien, Jean-Luc, D’Angelo
			if (r == '\'' || r == '-' || r == '’') && e+size < len(t) {
				nr, _ := utf8.DecodeRuneInString(t[e+size:])
				if unicode.IsLetter(nr) {
					e += size
					continue
				}
			}
			break
		}
		// a possessive 's is not part of the name: "Tancredi's laptop"
		skip := e
		// (rule set 1 keeps it inside the word)
		if !sc.v1 && e-s > 3 && strings.HasSuffix(t[s:e], "'s") {
			e -= 2
		} else if !sc.v1 && e-s > 5 && strings.HasSuffix(t[s:e], "’s") {
			e -= len("’s")
		}
		if e < len(t) && (isDigit(t[e]) || t[e] == '_' || t[e] == '=' || t[e] == '(' ||
			(t[e] == '.' && e+1 < len(t) && isAlnum(t[e+1])) || (t[e] == '/' && e+1 < len(t) && isAlnum(t[e+1]))) {
			glued = true
		}
		if !glued {
			w := word{s: s, e: e, lineStart: lineStart, logLine: logLine, sentStart: sent}
			first, _ := utf8.DecodeRuneInString(t[s:])
			switch {
			case upper == 1 && lower == 0 && e < len(t) && t[e] == '.':
				w.shape = shInitial
			case upper == 0:
				w.shape = shLower
			case unicode.IsUpper(first) && upper == 1:
				w.shape = shCap
			case lower == 0:
				w.shape = shUpper
			case unicode.IsUpper(first) && strings.ContainsAny(t[s:e], "'-’"):
				w.shape = shCap // O'Brien, McArthur-Smith
			case unicode.IsUpper(first) && (strings.HasPrefix(t[s:e], "Mc") || strings.HasPrefix(t[s:e], "Mac")):
				w.shape = shCap
			default:
				w.shape = shMixed
			}
			w.flags = sc.lookup(t[s:e])
			sc.words = append(sc.words, w)
		}
		lineStart, sent = false, false
		i = max(e, skip)
	}
}

// isLogLine: a line that starts with a timestamp, a level or a bracket, or
// carries key=value pairs, is machine output; names there need a cue.
func isLogLine(t string, i int) bool {
	end := i
	for end < len(t) && t[end] != '\n' {
		end++
	}
	line := t[i:end]
	for len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		line = line[1:]
	}
	if len(line) == 0 {
		return false
	}
	if isDigit(line[0]) && len(line) > 8 && (line[4] == '-' || line[2] == ':' || line[2] == '/' || line[4] == '/') {
		return true
	}
	if line[0] == '[' || line[0] == '{' {
		return true
	}
	for _, lv := range []string{"INFO", "WARN", "ERROR", "DEBUG", "TRACE", "FATAL", "level=", "ts=", "time="} {
		if strings.HasPrefix(line, lv) {
			return true
		}
	}
	return strings.Count(line, "=") >= 2 && !strings.Contains(line, "==")
}

func (sc *scanner) nameOK(w word) bool {
	if !(w.shape == shCap || w.shape == shUpper) || w.e-w.s < 2 {
		return false
	}
	// a common word is a name when an email address in the text says so
	return w.flags&sc.common == 0 || sc.names.email[sc.lowerWord(w)]
}

// gap is the text between two words.
func (sc *scanner) gap(a, b word) string { return sc.text[a.e:b.s] }

// findNames runs the cue/list/shape pass, then re-finds.
func (sc *scanner) findNames() {
	sc.tokenize()
	ws := sc.words
	for range ws {
		sc.names.covered = append(sc.names.covered, false)
		sc.names.anchor = append(sc.names.anchor, false)
		sc.names.anchorCue = append(sc.names.anchorCue, false)
	}
	if sc.names.known == nil {
		sc.names.known = map[string]bool{}
	}
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if !(w.shape == shCap || w.shape == shUpper || w.shape == shInitial) {
			// lower-case names right after "my name is" / "name:" in the lists
			if w.shape == shLower && w.flags&(fFirst|fLast) != 0 && w.flags&fAmbig == 0 && sc.strongCue(i) {
				j := i + 1
				for j < len(ws) && j-i < 3 && ws[j].shape == shLower && ws[j].flags&(fFirst|fLast) != 0 && sc.gap(ws[j-1], ws[j]) == " " {
					j++
				}
				sc.acceptName(i, j, 0.8, "name-cue")
				i = j - 1
			}
			continue
		}
		// the run of name-shaped words from i
		j := i
		for j < len(ws) && j-i < 5 {
			x := ws[j]
			if j > i {
				g := sc.gap(ws[j-1], x)
				if !(g == " " || (ws[j-1].shape == shInitial && g == ". ") || g == "-") {
					break
				}
				if x.lineStart {
					break
				}
			}
			if x.shape == shInitial && j > i {
				j++
				continue
			}
			if j > i && x.shape == shLower && particles[sc.lowerWord(x)] && j+1 < len(ws) && sc.nameOK(ws[j+1]) && sc.gap(x, ws[j+1]) == " " {
				j++
				continue
			}
			if !sc.nameOK(x) && !(x.flags&(fFirst|fLast) != 0 && x.flags&fAmbig != 0 && (x.shape == shCap || x.shape == shUpper)) {
				break
			}
			j++
		}
		// trailing initials or particles do not end a name
		for j > i && (ws[j-1].shape == shInitial || ws[j-1].shape == shLower) {
			j--
		}
		if j == i {
			continue
		}
		// suffixes: Jr., Sr., II, III, PhD
		end := j
		if end < len(ws) && sc.gap(ws[end-1], ws[end]) == " " || end < len(ws) && sc.gap(ws[end-1], ws[end]) == ", " {
			switch sc.text[ws[end].s:ws[end].e] {
			case "Jr", "Sr", "II", "III", "IV", "PhD", "MD":
				end++
			}
		}
		score, rec := sc.nameEvidence(i, j)
		if score > 0 {
			sc.acceptName(i, end, score, rec)
			i = end - 1
		}
	}
	if !sc.v1 {
		sc.coordinate()
	}
	sc.refind()
}

// strongCue: the words before ws[i] make it a name.
func (sc *scanner) strongCue(i int) bool {
	if i == 0 {
		return false
	}
	ws := sc.words
	p := ws[i-1]
	g := sc.gap(p, ws[i])
	if strings.ContainsAny(g, "\n") && !strings.HasSuffix(strings.TrimRight(g, " \n\t"), ":") {
		return false
	}
	if len(g) > 3 {
		return false
	}
	pw := sc.lowerWord(p)
	if titles[pw] && (g == " " || g == ". ") {
		return true
	}
	if !cues[pw] && (sc.v1 || !cues2[pw]) {
		return false
	}
	if weakCue[pw] || pw == "is" || pw == "am" {
		lead := ""
		if i >= 2 {
			lead = sc.lowerWord(ws[i-2])
		}
		if i < 2 || !weakCueLead[lead] && (sc.v1 || !weakCueLead2[lead]) || sc.gap(ws[i-2], p) != " " {
			return false
		}
		return g == " " || g == ": "
	}
	return g == " " || g == ": " || g == ", " || g == ":\t" || g == ":" || g == ",\n" || g == "-"
}

// signature: the word starts a short line after a closing line.
func (sc *scanner) signature(i int) bool {
	w := sc.words[i]
	if !w.lineStart {
		return false
	}
	t := sc.text
	ls := w.s
	for ls > 0 && t[ls-1] != '\n' {
		ls--
	}
	if ls == 0 {
		return false
	}
	pe := ls - 1
	ps := pe
	for ps > 0 && t[ps-1] != '\n' {
		ps--
	}
	prev := strings.ToLower(strings.TrimSpace(t[ps:pe]))
	prev = strings.TrimRight(prev, ",.!-— ")
	for _, c := range closings {
		if prev == c {
			return true
		}
	}
	return false
}

// nameEvidence scores the run ws[i:j] (0: not a name).
func (sc *scanner) nameEvidence(i, j int) (float64, string) {
	ws := sc.words
	n := 0 // name-shaped words (not initials/particles)
	first, last, email, ambig, upper := false, false, false, false, 0
	for k := i; k < j; k++ {
		w := ws[k]
		if w.shape == shInitial || w.shape == shLower {
			continue
		}
		n++
		if w.flags&fFirst != 0 && w.flags&fAmbig == 0 {
			first = true
		}
		if w.flags&fLast != 0 && w.flags&fAmbig == 0 {
			last = true
		}
		if w.flags&fAmbig != 0 {
			ambig = true
		}
		if w.shape == shUpper {
			upper++
		}
		if sc.names.email[sc.lowerWord(w)] {
			email = true
		}
	}
	if n == 0 {
		return 0, ""
	}
	cue := sc.strongCue(i) || sc.signature(i) ||
		!sc.v1 && (sc.fieldCue(i) || sc.dashSignature(i, j) || sc.inverted(i, j))
	log := ws[i].logLine
	allUpper := upper == n
	switch {
	case cue && (!allUpper || n >= 1):
		if allUpper && n == 1 && !(first || last || email) {
			return 0, "" // "Dear ACME" is too thin
		}
		return 0.9, "name-cue"
	case log:
		return 0, ""
	case email:
		return 0.85, "name-email"
	case first:
		return 0.85, "name-list"
	case last && n >= 2:
		return 0.8, "name-list"
	case ambig && n >= 2 && !allUpper:
		return 0.7, "name-list"
	case !sc.v1 && n <= 3 && !allUpper && !ambig && sc.vocative(i, j):
		return 0.75, "name-vocative"
	case n == 1 && !allUpper && !ambig && sc.verbAfter(j):
		return 0.65, "name-verb"
	case n >= 2 && n <= 3 && !allUpper && !ambig:
		// shape alone: capitalised words none of which is common
		if sc.titleCaseLine(i) {
			return 0, ""
		}
		return 0.6, "name-shape"
	}
	return 0, ""
}

// titleCaseLine: a heading ("Quarterly Revenue Report") — most words of
// the line capitalised.
func (sc *scanner) titleCaseLine(i int) bool {
	ws := sc.words
	caps, all := 0, 0
	for k := i; k >= 0 && k > i-8; k-- {
		all++
		if ws[k].shape == shCap || ws[k].shape == shUpper {
			caps++
		}
		if ws[k].lineStart {
			break
		}
	}
	for k := i + 1; k < len(ws) && k < i+8 && !ws[k].lineStart; k++ {
		all++
		if ws[k].shape == shCap || ws[k].shape == shUpper {
			caps++
		}
	}
	return all >= 4 && caps*4 >= all*3
}

func (sc *scanner) acceptName(i, j int, score float64, rec string) {
	ws := sc.words
	sc.add(Name, ws[i].s, ws[j-1].e, score, rec, 0)
	strong := rec == "name-cue" || rec == "name-list" || rec == "name-email" || rec == "name-verb"
	for k := i; k < j; k++ {
		sc.names.covered[k] = true
		sc.names.anchor[k] = strong
		sc.names.anchorCue[k] = rec == "name-cue"
		if ws[k].shape == shInitial || ws[k].e-ws[k].s < 3 || ws[k].flags&sc.common != 0 {
			continue
		}
		if ws[k].shape == shLower && particles[sc.lowerWord(ws[k])] {
			continue
		}
		sc.names.known[sc.lowerWord(ws[k])] = true
	}
}

// refind marks every other occurrence of a found name's words.
func (sc *scanner) refind() {
	if len(sc.names.known) == 0 {
		return
	}
	ws := sc.words
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if w.shape == shInitial || w.shape == shMixed || w.e-w.s < 3 || sc.names.covered[i] {
			continue
		}
		if !sc.names.known[sc.lowerWord(w)] {
			continue
		}
		if w.shape == shLower && (w.flags&(sc.common|fAmbig) != 0 || w.flags&(fFirst|fLast) == 0) {
			continue
		}
		j := i + 1
		for j < len(ws) && !sc.names.covered[j] && sc.names.known[sc.lowerWord(ws[j])] && sc.gap(ws[j-1], ws[j]) == " " {
			j++
		}
		sc.add(Name, w.s, ws[j-1].e, 0.8, "name-refind", 0)
		i = j - 1
	}
}

// verbs that follow a person: "Alec said", "Imogen wrote". Only verbs
// whose subject is nearly always a person (not "needs", "sent", "will").
var personVerbs = map[string]bool{"said": true, "says": true, "asked": true, "asks": true, "wrote": true, "writes": true,
	"told": true, "tells": true, "replied": true, "mentioned": true, "emailed": true, "texted": true, "phoned": true,
	"thinks": true, "wants": true, "agreed": true, "explained": true, "promised": true, "confirmed": true, "sagte": true,
	"schrieb": true, "dit": true, "a dit": true, "dijo": true, "disse": true, "escribió": true,
}

// personVerbs2: the verbs rule set 2 adds.
var personVerbs2 = map[string]bool{
	"called": true, "calls": true, "owes": true, "prefers": true, "complained": true, "apologised": true,
	"apologized": true, "forgot": true, "visited": true, "resigned": true, "feels": true, "felt": true, "believes": true,
	"remembers": true, "decided": true, "noticed": true, "approved": true, "signed": true, "joined": true, "joins": true,
	"think": true, "want": true, "prefer": true, "agree": true, "ask": true, "reports": true, "denies": true,
	"lost": true, "misses": true, "missed": true, "smiled": true, "laughed": true, "cried": true, "married": true}

// between a person and the verb: auxiliaries and adverbs ("Tobiah has
// already approved").
var verbFillers = map[string]bool{"has": true, "had": true, "have": true, "just": true, "already": true, "also": true,
	"never": true, "still": true, "then": true, "again": true, "always": true, "finally": true, "really": true}

func (sc *scanner) verbAfter(j int) bool {
	ws := sc.words
	if sc.v1 {
		return j < len(ws) && sc.gap(ws[j-1], ws[j]) == " " && personVerbs[sc.lowerWord(ws[j])]
	}
	for k := j; k < len(ws) && k < j+3; k++ {
		if sc.gap(ws[k-1], ws[k]) != " " {
			return false
		}
		w := sc.lowerWord(ws[k])
		if personVerbs[w] || personVerbs2[w] {
			return true
		}
		// a self-introduction at the start of a sentence: "Odalys here, …"
		if k == j && w == "here" && ws[k].e < len(sc.text) && sc.text[ws[k].e] == ',' && ws[j-1].sentStart {
			return true
		}
		// only a person pairs with "I": "Wenonah and I will…"
		if k == j && (w == "and" || w == "&") && k+1 < len(ws) && sc.text[ws[k+1].s:ws[k+1].e] == "I" {
			return true
		}
		if !verbFillers[w] {
			return false
		}
	}
	return false
}

// nameFields are the keys of structured fields holding a person's name
// (lower case, without '_' and '-').
var nameFields = map[string]bool{"name": true, "fullname": true, "firstname": true, "lastname": true, "givenname": true,
	"familyname": true, "surname": true, "displayname": true, "legalname": true, "middlename": true, "customername": true,
	"patientname": true, "contactname": true, "holdername": true, "accountholder": true, "accountholdername": true,
	"cardholder": true, "cardholdername": true, "ownername": true, "sendername": true, "recipientname": true,
	"clientname": true, "employeename": true, "membername": true, "guestname": true, "passengername": true,
	"drivername": true, "beneficiary": true, "beneficiaryname": true, "applicantname": true, "personname": true,
	"author": true, "reporter": true, "assignee": true, "nom": true, "nombre": true, "vorname": true, "nachname": true}

// fieldCue: the word opens the value of a structured field that holds a
// person's name (name="…", "full_name": "…", customer_name: …), in logs,
// JSON and YAML alike. The value must still be name-shaped, so
// name: release-pipeline is not a name.
func (sc *scanner) fieldCue(i int) bool {
	t := sc.text
	k := sc.words[i].s
	if k > 0 && (t[k-1] == '"' || t[k-1] == '\'') {
		k--
	}
	for k > 0 && t[k-1] == ' ' {
		k--
	}
	if k == 0 || (t[k-1] != '=' && t[k-1] != ':') {
		return false
	}
	k--
	if k > 0 && (t[k-1] == '"' || t[k-1] == '\'') {
		k--
	}
	e := k
	for k > 0 && e-k <= 40 && (isAlnum(t[k-1]) || t[k-1] == '_' || t[k-1] == '-') {
		k--
	}
	var buf [40]byte
	n := 0
	for p := k; p < e && n < len(buf); p++ {
		c := t[p]
		if c == '_' || c == '-' {
			continue
		}
		if isUpper(c) {
			c += 32
		}
		buf[n] = c
		n++
	}
	return n >= 3 && nameFields[string(buf[:n])]
}

// dashSignature: "-- Zephyrine" or "— Tobiah" alone on its line.
func (sc *scanner) dashSignature(i, j int) bool {
	// look back a few bytes only: "-- " then the start of the line
	t := sc.text
	ls := sc.words[i].s
	for n := 0; ls > 0 && t[ls-1] != '\n' && n < 8; n++ {
		ls--
	}
	if ls > 0 && t[ls-1] != '\n' {
		return false
	}
	pre := strings.TrimSpace(t[ls:sc.words[i].s])
	if pre != "--" && pre != "—" && pre != "-" && pre != "–" {
		return false
	}
	end := sc.words[j-1].e
	return end == len(t) || t[end] == '\n' || t[end] == '\r'
}

var auxiliaries = map[string]bool{"can": true, "could": true, "will": true, "would": true, "did": true, "does": true,
	"should": true, "has": true, "is": true, "was": true}

// inverted: a question with the name as its subject ("Can Yevgenia join
// the call?"): an auxiliary opens the sentence and a lower-case verb follows.
func (sc *scanner) inverted(i, j int) bool {
	ws := sc.words
	if i == 0 || j >= len(ws) || !ws[i-1].sentStart || ws[i-1].shape != shCap || sc.gap(ws[i-1], ws[i]) != " " {
		return false
	}
	return auxiliaries[sc.lowerWord(ws[i-1])] && ws[j].shape == shLower && sc.gap(ws[j-1], ws[j]) == " " &&
		!strings.ContainsRune(sc.text[ws[i-1].e:ws[j].s], '\n')
}

// greetings that a vocative name closes: "Thanks so much, Severin!"
var greetings = map[string]bool{"thanks": true, "thank": true, "welcome": true, "congratulations": true,
	"congrats": true, "cheers": true, "bye": true, "goodbye": true, "morning": true, "afternoon": true, "evening": true,
	"night": true, "hi": true, "hello": true, "hey": true, "sorry": true, "birthday": true, "aboard": true}

// vocative: a name addressed as the text's first line ("Ottoline,\n\n…")
// or closing a greeting ("Welcome aboard, Tobiah!").
func (sc *scanner) vocative(i, j int) bool {
	ws, t := sc.words, sc.text
	end := ws[j-1].e
	// The salutation: "Ottoline," alone on the first line of the text. Not
	// any line: in real mail a word and a comma opening a line is far more
	// often a discourse word or a sign-off ("Well, I…", "Anyway,",
	// "Enjoy,") than a name (the public mail corpus, docs/redaction.md).
	if i == 0 && end < len(t) && t[end] == ',' && strings.TrimSpace(t[:ws[i].s]) == "" {
		rest := t[end+1:]
		if len(rest) == 0 || rest[0] == '\n' || rest[0] == '\r' {
			return true
		}
	}
	if i > 0 && sc.gap(ws[i-1], ws[i]) == ", " && (end == len(t) || strings.IndexByte("!.?\n", t[end]) >= 0) {
		for k := i - 1; k >= 0 && k > i-8; k-- {
			if greetings[sc.lowerWord(ws[k])] {
				return true
			}
			if ws[k].sentStart || ws[k].lineStart {
				break
			}
		}
	}
	return false
}

var conjunctions = map[string]bool{"and": true, "or": true, "und": true, "oder": true, "et": true, "ou": true,
	"y": true, "o": true, "e": true}

// coordinate: name-shaped words joined to a found name by "and", "or" or
// "&", or a further item of a list of names ("Tancredi and Lavinia",
// "Attendees: A B, C D"), are a name too.
func (sc *scanner) coordinate() {
	ws := sc.words
	for pass := 0; pass < 2; pass++ {
		changed := false
		for i := 0; i < len(ws); i++ {
			if sc.names.covered[i] || ws[i].shape != shCap || ws[i].logLine || !sc.nameOK(ws[i]) || ws[i].flags&fAmbig != 0 {
				continue
			}
			j := i + 1
			for j < len(ws) && j-i < 3 && !sc.names.covered[j] && ws[j].shape == shCap && sc.nameOK(ws[j]) &&
				ws[j].flags&fAmbig == 0 && sc.gap(ws[j-1], ws[j]) == " " {
				j++
			}
			if sc.linkedBefore(i, j) || sc.linkedAfter(j) {
				sc.acceptName(i, j, 0.75, "name-coord")
				// a name joined to a strong one is an anchor in turn, and a
				// further item of a cue's list carries the list on
				list := i >= 1 && sc.names.anchorCue[i-1] && sc.gap(ws[i-1], ws[i]) == ", "
				for k := i; k < j; k++ {
					sc.names.anchor[k], sc.names.anchorCue[k] = true, list
				}
				changed = true
			}
			i = j - 1
		}
		if !changed {
			break
		}
	}
}

func (sc *scanner) linkedBefore(i, j int) bool {
	ws, t := sc.words, sc.text
	if i >= 1 && sc.names.anchor[i-1] {
		g := sc.gap(ws[i-1], ws[i])
		if g == " & " {
			return true
		}
		if g == ", " && sc.names.anchorCue[i-1] {
			// a list: this item ends the line or is followed by another
			end := ws[j-1].e
			return end == len(t) || t[end] == '\n' || t[end] == ',' || (j < len(ws) && conjunctions[sc.lowerWord(ws[j])])
		}
	}
	return i >= 2 && sc.names.anchor[i-2] && !sc.names.covered[i-1] && conjunctions[sc.lowerWord(ws[i-1])] &&
		sc.gap(ws[i-2], ws[i-1]) == " " && sc.gap(ws[i-1], ws[i]) == " "
}

func (sc *scanner) linkedAfter(j int) bool {
	ws := sc.words
	if j >= len(ws) {
		return false
	}
	if sc.names.anchor[j] && sc.gap(ws[j-1], ws[j]) == " & " {
		return true
	}
	return j+1 < len(ws) && sc.names.anchor[j+1] && !sc.names.covered[j] && conjunctions[sc.lowerWord(ws[j])] &&
		sc.gap(ws[j-1], ws[j]) == " " && sc.gap(ws[j], ws[j+1]) == " "
}
