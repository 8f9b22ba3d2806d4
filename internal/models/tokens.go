package models

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// codec is the cl100k_base BPE tokenizer (vocabulary compiled in, nothing
// downloaded). Building it takes a moment, so it is built once, on first use.
var codec = sync.OnceValue(func() tokenizer.Codec {
	c, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		panic(err) // compiled-in encoding: cannot fail
	}
	return c
})

// CountTokens counts s in cl100k_base tokens.
func CountTokens(s string) int {
	if s == "" {
		return 0
	}
	_, toks, err := codec().Encode(s)
	if err != nil {
		return len(s)/4 + 1
	}
	return len(toks)
}

// splitTokens returns s as its token strings (concatenating them gives s).
func splitTokens(s string) []string {
	if s == "" {
		return nil
	}
	_, toks, err := codec().Encode(s)
	if err != nil {
		return []string{s}
	}
	return toks
}
