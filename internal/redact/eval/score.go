package eval

import (
	"fmt"
	"sort"
	"strings"

	"conduit/internal/redact"
)

// Counts are span-level tallies. Precision counts predicted spans that
// match a gold span, recall counts gold spans matched by a prediction
// (the two can differ when spans split or merge, as in Presidio's
// evaluator).
type Counts struct {
	PredMatched, Pred int
	GoldMatched, Gold int
}

func (c Counts) Precision() float64 { return ratio(c.PredMatched, c.Pred) }
func (c Counts) Recall() float64    { return ratio(c.GoldMatched, c.Gold) }

// F is the F-beta score (beta 2 weighs recall twice, Presidio's choice).
func (c Counts) F(beta float64) float64 {
	p, r := c.Precision(), c.Recall()
	if p == 0 && r == 0 {
		return 0
	}
	b2 := beta * beta
	return (1 + b2) * p * r / (b2*p + r)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Report is the evaluation of one split.
type Report struct {
	Split      string
	Records    int
	PII        Counts // type-blind
	ByType     map[redact.Type]*Counts
	NameByLoc  map[string]*Counts // NAME recall by locale (all names out of the detector's lists)
	Clean      int                // clean records
	CleanHit   int                // clean records with any detection
	CleanBytes int
	CleanFP    int // detections on clean records
	CleanFPBy  map[redact.Type]int
}

// IoU is the character intersection over union of two spans.
func IoU(a0, a1, b0, b1 int) float64 {
	i := min(a1, b1) - max(a0, b0)
	if i <= 0 {
		return 0
	}
	u := max(a1, b1) - min(a0, b0)
	return float64(i) / float64(u)
}

// Threshold is the IoU at which a predicted span matches a gold span.
const Threshold = 0.9

// Score runs detect over the records of split ("" for all).
func Score(recs []Record, split string, detect func(string) ([]redact.Entity, error)) (*Report, error) {
	rep := &Report{Split: split, ByType: map[redact.Type]*Counts{}, NameByLoc: map[string]*Counts{}, CleanFPBy: map[redact.Type]int{}}
	for _, t := range redact.Types {
		rep.ByType[t] = &Counts{}
	}
	for _, rec := range recs {
		if split != "" && rec.Split != split {
			continue
		}
		rep.Records++
		pred, err := detect(rec.Text)
		if err != nil {
			return nil, err
		}
		if rec.Domain == "clean" {
			rep.Clean++
			rep.CleanBytes += len(rec.Text)
			if len(pred) > 0 {
				rep.CleanHit++
			}
			rep.CleanFP += len(pred)
			for _, p := range pred {
				rep.CleanFPBy[p.Type]++
			}
		}
		for _, p := range pred {
			anyM, typeM := false, false
			for _, g := range rec.Spans {
				if IoU(p.Start, p.End, g.Start, g.End) >= Threshold {
					anyM = true
					if g.Type == p.Type {
						typeM = true
					}
				}
			}
			rep.PII.Pred++
			c := rep.ByType[p.Type]
			c.Pred++
			if anyM {
				rep.PII.PredMatched++
			}
			if typeM {
				c.PredMatched++
			}
		}
		for _, g := range rec.Spans {
			anyM, typeM := false, false
			for _, p := range pred {
				if IoU(p.Start, p.End, g.Start, g.End) >= Threshold {
					anyM = true
					if g.Type == p.Type {
						typeM = true
					}
				}
			}
			rep.PII.Gold++
			c := rep.ByType[g.Type]
			c.Gold++
			if anyM {
				rep.PII.GoldMatched++
			}
			if typeM {
				c.GoldMatched++
			}
			if g.Type == redact.Name {
				nl := rep.NameByLoc[rec.Locale]
				if nl == nil {
					nl = &Counts{}
					rep.NameByLoc[rec.Locale] = nl
				}
				nl.Gold++
				if typeM {
					nl.GoldMatched++
				}
			}
		}
	}
	return rep, nil
}

// Markdown renders the report as the tables of docs/redaction.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Split %q: %d records (%d clean).\n\n", r.Split, r.Records, r.Clean)
	fmt.Fprintf(&b, "| scope | precision | recall | F1 | F2 | gold | predicted |\n|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| **PII (type-blind)** | %.3f | %.3f | %.3f | **%.3f** | %d | %d |\n", r.PII.Precision(), r.PII.Recall(), r.PII.F(1), r.PII.F(2), r.PII.Gold, r.PII.Pred)
	for _, t := range redact.Types {
		c := r.ByType[t]
		if c.Gold == 0 && c.Pred == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f | %d | %d |\n", t, c.Precision(), c.Recall(), c.F(1), c.F(2), c.Gold, c.Pred)
	}
	var locs []string
	for l := range r.NameByLoc {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	fmt.Fprintf(&b, "\nNAME recall on out-of-list names, by locale:")
	for _, l := range locs {
		c := r.NameByLoc[l]
		fmt.Fprintf(&b, " %s %.2f (%d);", l, c.Recall(), c.Gold)
	}
	fmt.Fprintf(&b, "\n\nClean text (logs, UUIDs, order ids, hashes, versions): %d of %d records flagged (%.1f%%), %d detections in %d KB",
		r.CleanHit, r.Clean, 100*ratio(r.CleanHit, r.Clean), r.CleanFP, r.CleanBytes/1024)
	if len(r.CleanFPBy) > 0 {
		var ts []string
		for t, n := range r.CleanFPBy {
			ts = append(ts, fmt.Sprintf("%s %d", t, n))
		}
		sort.Strings(ts)
		fmt.Fprintf(&b, " (%s)", strings.Join(ts, ", "))
	}
	b.WriteString(".\n")
	return b.String()
}
