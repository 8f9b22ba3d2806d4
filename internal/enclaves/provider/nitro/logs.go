package nitro

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"conduit/internal/enclaves/provider"
)

// seqPerMillisecond: a log line's sequence number is its event's timestamp in milliseconds
// times this, plus its rank among the stream's events of that millisecond. Events in a stream
// are ordered by timestamp and never change, so the numbers are stable across calls and workers,
// and `after` turns back into a startTime. (More than 1000 events in one millisecond of one
// stream would overflow the rank; the agent's shipper batches per line, far below that.)
const seqPerMillisecond = 1000

// maxLogLines bounds one call without a limit.
const maxLogLines = 10000

// Logs reads the enclave's stream (LogGroup/<id>) from CloudWatch Logs, oldest first, after
// sequence number after. A message that is a JSON object {"stream": "stdout"|"stderr", "text":
// …} carries its stream; any other message is a stdout line.
func (p *Provider) Logs(ctx context.Context, id string, after int64, limit int) ([]provider.LogLine, error) {
	if err := checkID("logs", id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > maxLogLines {
		limit = maxLogLines
	}
	startMs := int64(0)
	if after > 0 {
		startMs = after / seqPerMillisecond
	}
	in := &cloudwatchlogs.GetLogEventsInput{
		LogGroupName:  aws.String(p.opts.LogGroup),
		LogStreamName: aws.String(id),
		StartFromHead: aws.Bool(true),
		StartTime:     aws.Int64(startMs),
	}
	var out []provider.LogLine
	lastMs, rank := int64(-1), int64(0)
	for pages := 0; pages < 1000; pages++ {
		page, err := p.logs.GetLogEvents(ctx, in)
		if err != nil {
			var nf *cwtypes.ResourceNotFoundException
			if errors.As(err, &nf) {
				return nil, nil // the stream does not exist yet: nothing was written
			}
			return nil, classify("logs", id, err)
		}
		for _, ev := range page.Events {
			ms := aws.ToInt64(ev.Timestamp)
			if ms == lastMs {
				rank++
			} else {
				lastMs, rank = ms, 0
			}
			if rank >= seqPerMillisecond {
				rank = seqPerMillisecond - 1
			}
			seq := ms*seqPerMillisecond + rank
			if seq <= after {
				continue
			}
			out = append(out, line(seq, ms, aws.ToString(ev.Message)))
			if len(out) == limit {
				return out, nil
			}
		}
		// The forward token repeats at the end of the stream.
		next := aws.ToString(page.NextForwardToken)
		if next == "" || next == aws.ToString(in.NextToken) {
			return out, nil
		}
		in.NextToken = aws.String(next)
	}
	return out, nil
}

func line(seq, ms int64, msg string) provider.LogLine {
	l := provider.LogLine{Seq: seq, Time: time.UnixMilli(ms).UTC(), Stream: provider.Stdout, Text: strings.TrimRight(msg, "\r\n")}
	if strings.HasPrefix(msg, "{") {
		var m struct {
			Stream string `json:"stream"`
			Text   string `json:"text"`
		}
		if json.Unmarshal([]byte(msg), &m) == nil && (m.Stream == "stdout" || m.Stream == "stderr") {
			l.Stream, l.Text = provider.Stream(m.Stream), strings.TrimRight(m.Text, "\r\n")
		}
	}
	return l
}
