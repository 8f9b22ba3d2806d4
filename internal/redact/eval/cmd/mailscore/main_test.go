package main

import (
	"slices"
	"testing"
)

// Gold spans are whole-word occurrences in code points: "Annex" and
// "Ann_" are not "Ann"; an address matches in any case.
func TestOccurrences(t *testing.T) {
	text := "Grüße Ann, Annex Ann_x Ann.\nmailto:ANN@Example.org"
	if got := occurrences(text, "Ann", true); !slices.Equal(got, [][2]int{{6, 9}, {23, 26}}) {
		t.Fatalf("names %v", got)
	}
	if got := occurrences(text, "ann@example.org", false); !slices.Equal(got, [][2]int{{35, 50}}) {
		t.Fatalf("address %v", got)
	}
	if occurrences(text, "", true) != nil {
		t.Fatal("empty needle")
	}
}
