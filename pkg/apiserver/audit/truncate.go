package audit

import (
	"encoding/json"
	"fmt"
	"maps"
)

// Truncation defaults, kube-apiserver's (--audit-{log,webhook}-truncate-max-*).
const (
	DefaultTruncateMaxEventSize = 100 * 1024       // bytes
	DefaultTruncateMaxBatchSize = 10 * 1024 * 1024 // bytes
)

// Version is the only audit event API version kube-apiserver 1.33 writes
// (--audit-log-version, --audit-webhook-version).
const Version = "audit.k8s.io/v1"

// TruncatedAnnotation marks an event whose request and response objects were removed
// because it was too large, as upstream's truncate backend does.
const TruncatedAnnotation = "audit.k8s.io/truncated"

// Truncate limits the size of events and of the batches they are sent in, as
// kube-apiserver's --audit-*-truncate-enabled. The zero value (Enabled false) leaves
// events whole.
type Truncate struct {
	Enabled bool
	// MaxEventSize: a larger event loses its request and response objects; if it is
	// still larger, it is dropped.
	MaxEventSize int
	// MaxBatchSize: a batch is split so that no request carries more bytes of events
	// (webhook backend).
	MaxBatchSize int
}

func (t Truncate) maxEvent() int {
	if t.MaxEventSize > 0 {
		return t.MaxEventSize
	}
	return DefaultTruncateMaxEventSize
}

func (t Truncate) maxBatch() int {
	if t.MaxBatchSize > 0 {
		return t.MaxBatchSize
	}
	return DefaultTruncateMaxBatchSize
}

// encode marshals ev, truncated as configured. The error says why an event was dropped.
func (t Truncate) encode(ev *Event) ([]byte, error) {
	data, err := json.Marshal(ev)
	if err != nil || !t.Enabled || len(data) <= t.maxEvent() {
		return data, err
	}
	short := *ev
	short.RequestObject, short.ResponseObject = nil, nil
	short.Annotations = maps.Clone(ev.Annotations)
	if short.Annotations == nil {
		short.Annotations = map[string]string{}
	}
	short.Annotations[TruncatedAnnotation] = "true"
	if data, err = json.Marshal(&short); err != nil {
		return nil, err
	}
	if len(data) > t.maxEvent() {
		return nil, fmt.Errorf("event is %d bytes without its request and response objects, more than the %d allowed", len(data), t.maxEvent())
	}
	return data, nil
}

// split cuts events into batches of at most MaxBatchSize bytes each (one event a batch
// at least); without truncation the batch stays whole.
func (t Truncate) split(events []json.RawMessage) [][]json.RawMessage {
	if !t.Enabled {
		return [][]json.RawMessage{events}
	}
	var out [][]json.RawMessage
	start, size := 0, 0
	for i, ev := range events {
		if i > start && size+len(ev) > t.maxBatch() {
			out = append(out, events[start:i])
			start, size = i, 0
		}
		size += len(ev)
	}
	return append(out, events[start:])
}
