package mail_test

import (
	"io"
	"mime"
	"mime/quotedprintable"
	"testing"
)

type mailDecoder struct{ mime.WordDecoder }

func (d *mailDecoder) decode(s string) (string, error) { return d.DecodeHeader(s) }

func decodeQP(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(quotedprintable.NewReader(r))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
