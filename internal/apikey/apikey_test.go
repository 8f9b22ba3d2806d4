package apikey

import (
	"sort"
	"strings"
	"testing"
)

func TestMintSplitMatch(t *testing.T) {
	k, err := Mint()
	if err != nil {
		t.Fatal(err)
	}
	prefix, secret, err := Split(k.Plain)
	if err != nil || prefix != k.Prefix {
		t.Fatalf("split %q: %v", k.Plain, err)
	}
	if !Matches(secret, k.Hash) {
		t.Fatal("own secret does not match")
	}
	if Matches(secret[:42]+"A", k.Hash) && secret[42] != 'A' {
		t.Fatal("altered secret matches")
	}
	if strings.Contains(Display(k.Prefix), secret) {
		t.Fatal("display leaks the secret")
	}
	k2, _ := Mint()
	if k2.Plain == k.Plain || k2.Prefix == k.Prefix {
		t.Fatal("keys repeat")
	}
}

func TestSplitRejectsMalformed(t *testing.T) {
	for _, s := range []string{"", "cnd", "cnd_abc_def", "xyz_0123456789ab_" + strings.Repeat("a", 43), "cnd_0123456789zz_" + strings.Repeat("a", 43), "cnd_0123456789ab_" + strings.Repeat("a", 42)} {
		if _, _, err := Split(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestNormalizeScopes(t *testing.T) {
	got, err := NormalizeScopes([]string{"pipelines:run", "pipelines:read", "pipelines:run"})
	if err != nil || strings.Join(got, ",") != "pipelines:read,pipelines:run" {
		t.Fatalf("%v %v", got, err)
	}
	_, err = NormalizeScopes([]string{"pipelines:read", "root", "admin:all"})
	if err == nil || !strings.Contains(err.Error(), `unknown permission "root", "admin:all"`) {
		t.Fatalf("%v", err)
	}
}

func FuzzSplit(f *testing.F) {
	k, _ := Mint()
	f.Add(k.Plain)
	f.Add("cnd__")
	f.Fuzz(func(t *testing.T, s string) {
		prefix, secret, err := Split(s)
		if err == nil && s != scheme+"_"+prefix+"_"+secret {
			t.Fatalf("split of %q does not reassemble", s)
		}
	})
}

// The catalog the key form is generated from names every scope a key can
// hold, once each.
func TestCatalogHoldsEveryScopeOnce(t *testing.T) {
	var names []string
	for _, g := range Catalog() {
		if g.Name == "" || len(g.Scopes) == 0 {
			t.Fatalf("group %+v", g)
		}
		for _, s := range g.Scopes {
			if s.Text == "" {
				t.Fatalf("scope %s has no description", s.Name)
			}
			names = append(names, s.Name)
		}
	}
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(AllScopes(), " ") {
		t.Fatalf("catalog %v, scopes %v", names, AllScopes())
	}
}
