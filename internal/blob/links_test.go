package blob

import (
	"testing"
	"time"
)

func TestLinksExpire(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	l, err := NewLinks([]byte("0123456789abcdef0123456789abcdef"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	l = l.WithClock(func() time.Time { return now })
	tok, exp := l.Token("library/med_1.mp3")
	if !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("expires %v", exp)
	}
	if !l.Verify("library/med_1.mp3", tok) {
		t.Fatal("a fresh link was refused")
	}
	if l.Verify("library/med_2.mp3", tok) {
		t.Fatal("a link opened another file")
	}
	if l.WithClock(func() time.Time { return now.Add(time.Hour) }).Verify("library/med_1.mp3", tok) {
		t.Fatal("an expired link was accepted")
	}
	var none *Links
	if none.Verify("library/med_1.mp3", tok) {
		t.Fatal("no signer accepted a link")
	}
}
