package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/graph"
	"conduit/internal/models"
	"conduit/internal/money"
	"conduit/internal/store"
)

// ErrTypeModelRequest marks a model error that retrying cannot fix.
const ErrTypeModelRequest = "ModelRequestError"

// DeltaSink receives a streamed node's tokens as they are produced, for
// readers in other processes (chat completions), several at a time.
type DeltaSink interface {
	PublishDeltas(ctx context.Context, runID string, ds []store.Delta) error
}

// Models runs text generation.
type Models struct {
	Catalog *models.Catalog
	Deltas  DeltaSink
}

// GenerateInput is one model node's call.
type GenerateInput struct {
	RunID   string
	NodeID  string
	Request graph.ModelRequest
	// Stream publishes tokens through the DeltaSink as they arrive.
	Stream bool
}

// GenerateOutput is the text with its usage and price.
type GenerateOutput struct {
	Text             string
	PromptTokens     int
	CompletionTokens int
	Cost             money.Micros
}

// Generate calls the node's model, heartbeating while it works so a dead
// worker is noticed within the heartbeat timeout and the call retried
// elsewhere.
func (m *Models) Generate(ctx context.Context, in GenerateInput) (GenerateOutput, error) {
	model, ok := m.Catalog.Model(in.Request.Model)
	if !ok {
		return GenerateOutput{}, temporal.NewNonRetryableApplicationError("unknown model "+in.Request.Model, ErrTypeModelRequest, nil)
	}
	stop := heartbeat(ctx)
	defer stop()

	attempt := int64(activity.GetInfo(ctx).Attempt)
	seq := int64(0)
	var batch *deltaBatch
	if in.Stream && m.Deltas != nil {
		batch = newDeltaBatch(ctx, m.Deltas, in.RunID)
	}
	onDelta := func(text string) error {
		if batch == nil {
			return nil
		}
		seq++
		return batch.add(store.Delta{Seq: attempt*1_000_000 + seq, Text: text})
	}
	resp, err := m.Catalog.Generate(ctx, models.Request{
		Model: in.Request.Model, System: in.Request.System, Prompt: in.Request.Prompt,
		MaxTokens: in.Request.MaxTokens, Temperature: in.Request.Temperature,
	}, onDelta)
	if batch != nil {
		// Every token is stored before the call answers, so a reader
		// that sees the run end has seen the stream whole.
		if werr := batch.wait(); err == nil && werr != nil {
			return GenerateOutput{}, werr
		}
	}
	if err != nil {
		if !models.IsRetryable(err) {
			return GenerateOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeModelRequest, nil)
		}
		var pe *models.ProviderError
		if errors.As(err, &pe) {
			return GenerateOutput{}, temporal.NewApplicationError(err.Error(), "ModelProviderError")
		}
		return GenerateOutput{}, err
	}
	return GenerateOutput{
		Text: resp.Text, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		Cost: model.Cost(resp.Usage),
	}, nil
}

// deltaFlushEvery is the least time between two writes of one stream's
// tokens once it is under way: a fast model's tokens go in a few
// transactions, not one each. The first write and the last are not held.
const deltaFlushEvery = 20 * time.Millisecond

// deltaBatch writes a stream's tokens from one goroutine at a time, in
// order: the first token goes out at once (time to first token); tokens
// produced while a write is in flight, or within deltaFlushEvery of the
// last one, go together in the next write (one statement each).
type deltaBatch struct {
	ctx   context.Context
	sink  DeltaSink
	runID string

	mu       sync.Mutex
	idle     *sync.Cond
	pending  []store.Delta
	busy     bool // a writer goroutine runs
	finished chan struct{}
	done     bool // finished is closed
	err      error
}

func newDeltaBatch(ctx context.Context, sink DeltaSink, runID string) *deltaBatch {
	b := &deltaBatch{ctx: ctx, sink: sink, runID: runID, finished: make(chan struct{})}
	b.idle = sync.NewCond(&b.mu)
	return b
}

// add queues a token; the error is the first failed write's, if any.
func (b *deltaBatch) add(d store.Delta) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	b.pending = append(b.pending, d)
	if !b.busy {
		b.busy = true
		go b.write()
	}
	return nil
}

func (b *deltaBatch) write() {
	var last time.Time
	b.mu.Lock()
	for len(b.pending) > 0 && b.err == nil {
		if wait := deltaFlushEvery - time.Since(last); !last.IsZero() && wait > 0 && !b.done {
			b.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-b.finished:
				t.Stop()
			}
			b.mu.Lock()
		}
		ds := b.pending
		b.pending = nil
		b.mu.Unlock()
		last = time.Now()
		err := b.sink.PublishDeltas(b.ctx, b.runID, ds)
		b.mu.Lock()
		if err != nil {
			b.err = err
		}
	}
	b.busy = false
	b.idle.Broadcast()
	b.mu.Unlock()
}

// wait writes what is left at once and returns when every token is
// written, or with the first write's error.
func (b *deltaBatch) wait() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.done = true
		close(b.finished)
	}
	for b.busy {
		b.idle.Wait()
	}
	return b.err
}
