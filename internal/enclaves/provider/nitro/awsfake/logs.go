package awsfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LogsTargetPrefix is the X-Amz-Target prefix of CloudWatch Logs operations.
const LogsTargetPrefix = "Logs_20140328."

// LogEvent is a stored event.
type LogEvent struct {
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	IngestionTime int64  `json:"ingestionTime"`
}

// Logs is the fake CloudWatch Logs JSON 1.1 API: CreateLogGroup, CreateLogStream, PutLogEvents,
// GetLogEvents.
type Logs struct {
	mu     sync.Mutex
	groups map[string]map[string][]LogEvent
	faults map[string][]Fault
	calls  map[string]int
}

// NewLogs has the given log groups.
func NewLogs(groups ...string) *Logs {
	l := &Logs{groups: map[string]map[string][]LogEvent{}, faults: map[string][]Fault{}, calls: map[string]int{}}
	for _, g := range groups {
		l.groups[g] = map[string][]LogEvent{}
	}
	return l
}

// Fail makes the next n calls of operation (e.g. "GetLogEvents") answer f (Code is the __type).
func (l *Logs) Fail(op string, n int, f Fault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < n; i++ {
		l.faults[op] = append(l.faults[op], f)
	}
}

// Calls counts requests of op.
func (l *Logs) Calls(op string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[op]
}

func (l *Logs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, LogsTargetPrefix)
	if r.Method != http.MethodPost || !ok {
		logsFail(w, Fault{Code: "UnknownOperationException", Message: "unknown operation " + target})
		return
	}
	l.calls[op]++
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		logsFail(w, Fault{Code: "SerializationException", Message: "Content-Type must be application/x-amz-json-1.1, got " + ct})
		return
	}
	if err := checkSigV4(r, "logs"); err != nil {
		logsFail(w, Fault{Code: "UnrecognizedClientException", Message: err.Error(), Status: 400})
		return
	}
	if q := l.faults[op]; len(q) > 0 {
		l.faults[op] = q[1:]
		logsFail(w, q[0])
		return
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		logsFail(w, Fault{Code: "SerializationException", Message: err.Error()})
		return
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(body[k], &s)
		return s
	}
	group, stream := str("logGroupName"), str("logStreamName")
	streams, gok := l.groups[group]
	switch op {
	case "CreateLogGroup":
		if gok {
			logsFail(w, Fault{Code: "ResourceAlreadyExistsException", Message: "The specified log group already exists"})
			return
		}
		l.groups[group] = map[string][]LogEvent{}
		writeJSON(w, map[string]any{})
		return
	}
	if !gok {
		logsFail(w, Fault{Code: "ResourceNotFoundException", Message: "The specified log group does not exist."})
		return
	}
	events, sok := streams[stream]
	switch op {
	case "CreateLogStream":
		if sok {
			logsFail(w, Fault{Code: "ResourceAlreadyExistsException", Message: "The specified log stream already exists"})
			return
		}
		streams[stream] = []LogEvent{}
		writeJSON(w, map[string]any{})
	case "PutLogEvents":
		if !sok {
			logsFail(w, Fault{Code: "ResourceNotFoundException", Message: "The specified log stream does not exist."})
			return
		}
		var in []LogEvent
		if err := json.Unmarshal(body["logEvents"], &in); err != nil || len(in) == 0 {
			logsFail(w, Fault{Code: "InvalidParameterException", Message: "logEvents must hold at least one event"})
			return
		}
		for i := 1; i < len(in); i++ {
			if in[i].Timestamp < in[i-1].Timestamp {
				logsFail(w, Fault{Code: "InvalidParameterException", Message: "Log events in a single PutLogEvents request must be in chronological order."})
				return
			}
		}
		now := time.Now().UnixMilli()
		for _, ev := range in {
			ev.IngestionTime = now
			// Keep the stream ordered by timestamp; equal timestamps keep arrival order.
			i := sort.Search(len(events), func(i int) bool { return events[i].Timestamp > ev.Timestamp })
			events = append(events[:i], append([]LogEvent{ev}, events[i:]...)...)
		}
		streams[stream] = events
		writeJSON(w, map[string]any{"nextSequenceToken": strconv.Itoa(len(events))})
	case "GetLogEvents":
		if !sok {
			logsFail(w, Fault{Code: "ResourceNotFoundException", Message: "The specified log stream does not exist."})
			return
		}
		l.getLogEvents(w, body, events)
	default:
		logsFail(w, Fault{Code: "UnknownOperationException", Message: "this fake does not implement " + op})
	}
}

// getLogEvents pages forward: tokens are "f/<index>" into the stream; at the end the token
// passed comes back, as CloudWatch does. Only startFromHead: true is implemented.
func (l *Logs) getLogEvents(w http.ResponseWriter, body map[string]json.RawMessage, events []LogEvent) {
	var in struct {
		StartTime     *int64  `json:"startTime"`
		EndTime       *int64  `json:"endTime"`
		NextToken     *string `json:"nextToken"`
		Limit         *int    `json:"limit"`
		StartFromHead *bool   `json:"startFromHead"`
	}
	raw, _ := json.Marshal(body)
	_ = json.Unmarshal(raw, &in)
	if in.StartFromHead == nil || !*in.StartFromHead {
		logsFail(w, Fault{Code: "InvalidParameterException", Message: "this fake reads streams from the head only (startFromHead: true)"})
		return
	}
	limit := 10000
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > 10000 {
			logsFail(w, Fault{Code: "InvalidParameterException", Message: "1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value between 1 and 10000"})
			return
		}
		limit = *in.Limit
	}
	pos := 0
	if in.NextToken != nil {
		n, err := strconv.Atoi(strings.TrimPrefix(*in.NextToken, "f/"))
		if !strings.HasPrefix(*in.NextToken, "f/") || err != nil || n < 0 || n > len(events) {
			logsFail(w, Fault{Code: "InvalidParameterException", Message: "The specified nextToken is invalid."})
			return
		}
		pos = n
	} else if in.StartTime != nil {
		pos = sort.Search(len(events), func(i int) bool { return events[i].Timestamp >= *in.StartTime })
	}
	end := pos
	out := []LogEvent{}
	for end < len(events) && len(out) < limit {
		if in.EndTime != nil && events[end].Timestamp >= *in.EndTime {
			break
		}
		out = append(out, events[end])
		end++
	}
	writeJSON(w, map[string]any{"events": out, "nextForwardToken": fmt.Sprintf("f/%d", end), "nextBackwardToken": fmt.Sprintf("b/%d", pos)})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func logsFail(w http.ResponseWriter, f Fault) {
	if f.Status == 0 {
		f.Status = 400
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", fmt.Sprintf("%d", time.Now().UnixNano()))
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": f.Code, "message": f.Message})
}
