package pipelines

import (
	"conduit/internal/mediakind"
	"conduit/internal/models"
	"conduit/internal/money"
	"conduit/internal/pricing"
)

// NodeCatalog is what an editor offers a pipeline's model and generation
// nodes: the text models a model node may name, with their token prices,
// and the pay-per-call menus a generation node is priced and checked by
// (docs/pipelines.md, "Generation nodes"), keyed by node kind.
type NodeCatalog struct {
	Models []CatalogModel `json:"models"`
	Media  map[string]any `json:"media"`
}

// CatalogModel is one text model of the catalog.
type CatalogModel struct {
	ID                 string       `json:"id"`
	Provider           string       `json:"provider"`
	PromptPer1KUSD     money.Micros `json:"promptPer1kUsd"`
	CompletionPer1KUSD money.Micros `json:"completionPer1kUsd"`
	ContextTokens      int          `json:"contextTokens,omitempty"`
}

// Catalog lists the models in catalog order and the menu of every media
// kind; menuURL is a kind's pay-per-call endpoint, the menus' "how to buy".
func Catalog(cat *models.Catalog, gen pricing.Generation, menuURL func(kind string) string, purchasesURL string) NodeCatalog {
	out := NodeCatalog{Models: []CatalogModel{}, Media: map[string]any{}}
	if cat != nil {
		for _, id := range cat.IDs() {
			m, _ := cat.Model(id)
			out.Models = append(out.Models, CatalogModel{ID: m.ID, Provider: m.Provider, PromptPer1KUSD: m.PromptPer1K,
				CompletionPer1KUSD: m.CompletionPer1K, ContextTokens: m.ContextTokens})
		}
	}
	for _, k := range mediakind.Names() {
		// A kind whose catalog is not configured has no menu to offer.
		if (k == mediakind.Speech && gen.Speech == nil) || (k == mediakind.Music && gen.Music == nil) || (k == mediakind.Video && gen.Video == nil) {
			continue
		}
		out.Media[k] = gen.Menu(k, menuURL(k), purchasesURL)
	}
	return out
}
