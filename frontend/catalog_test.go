package frontend_test

import (
	"net/http"
	"testing"
)

// GET /api/catalog lists what an editor offers model and generation nodes:
// every text model of the catalog with its token prices, and the menu of
// each media kind with its models, prices and (speech) voices; a caller
// without a credential gets 401.
func TestCatalogListsModelsAndMediaMenus(t *testing.T) {
	_, key := env.NewAccount(t)
	cat := wantStatus(t, do(t, "GET", "/api/catalog", key, nil), http.StatusOK)

	var echo map[string]any
	for _, m := range cat["models"].([]any) {
		if m := m.(map[string]any); m["id"] == "local-echo" {
			echo = m
		}
	}
	if echo == nil || echo["provider"] != "local" || echo["promptPer1kUsd"] != 0.0001 || echo["completionPer1kUsd"] != 0.0002 {
		t.Fatalf("local-echo in the catalog: %v (models %v)", echo, cat["models"])
	}
	media := cat["media"].(map[string]any)
	speech := media["speech"].(map[string]any)
	if len(speech["voices"].([]any)) == 0 || len(speech["models"].([]any)) == 0 {
		t.Errorf("the speech menu has no voices or models: %v", speech)
	}
	for _, kind := range []string{"music", "video"} {
		menu := media[kind].(map[string]any)
		models := menu["models"].([]any)
		if len(models) == 0 {
			t.Fatalf("the %s menu has no models: %v", kind, menu)
		}
		prices := models[0].(map[string]any)["prices"].([]any)
		if len(prices) == 0 || prices[0].(map[string]any)["priceUsd"].(float64) <= 0 {
			t.Errorf("the %s menu's first model has no prices: %v", kind, models[0])
		}
	}
	if r := do(t, "GET", "/api/catalog", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("without a key: %d %s", r.Status, r.Body)
	}
}
