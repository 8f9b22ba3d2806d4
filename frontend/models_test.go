package frontend_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The official client lists models (the first thing OpenAI-compatible tools
// do) relative to a pipeline's chat base URL: the account's published
// pipelines, and a retrieve of one that is not is OpenAI's 404.
func TestModelsListWithTheOpenAIClient(t *testing.T) {
	_, key := env.NewAccount(t)
	id, base := chatPipeline(t, key, "local-echo")
	draft := createPipeline(t, key, echoGraph("{{question}}", "local-echo")) // never published
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))

	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != id || page.Data[0].Object != "model" || page.Data[0].Created == 0 {
		t.Fatalf("models %+v", page.Data)
	}
	m, err := client.Models.Get(context.Background(), id)
	if err != nil || m.ID != id {
		t.Fatalf("retrieve: %+v %v", m, err)
	}
	_, err = client.Models.Get(context.Background(), draft)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("an unpublished pipeline as a model: %v", err)
	}

	// Another account's key sees none of it.
	_, other := env.NewAccount(t)
	otherClient := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(other), option.WithMaxRetries(0))
	if _, err := otherClient.Models.List(context.Background()); !errors.As(err, &apiErr) || apiErr.StatusCode != 403 {
		t.Fatalf("another account listing: %v", err)
	}
}
