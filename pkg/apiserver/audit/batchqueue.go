package audit

import (
	"log/slog"
	"sync"
)

// batchQueue holds a batch-mode backend's encoded events until its sender takes them: up to
// its size wait, more are dropped and counted (logged at the first and every 1000th drop),
// as upstream's buffered backend does. close lets the sender take what is left and waits
// for it to finish.
type batchQueue struct {
	what   string // the backend, in the log: "audit" or "audit webhook"
	logger *slog.Logger
	events chan []byte
	done   chan struct{}

	mu      sync.Mutex
	closed  bool
	dropped int
}

// startBatchQueue starts send on the queue's events; send returns when the channel is
// closed and drained.
func startBatchQueue(size int, what string, logger *slog.Logger, send func(events <-chan []byte)) *batchQueue {
	q := &batchQueue{what: what, logger: logger, events: make(chan []byte, size), done: make(chan struct{})}
	go func() {
		defer close(q.done)
		send(q.events)
	}()
	return q
}

// put queues one event, or drops it when the queue is full or closed.
func (q *batchQueue) put(ev []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	select {
	case q.events <- ev:
	default:
		q.dropped++
		if q.dropped == 1 || q.dropped%1000 == 0 {
			q.logger.Error(q.what+": batch buffer full, events dropped", "dropped", q.dropped)
		}
	}
}

// close stops taking events and waits until the sender has handled the rest. Closing twice
// is harmless.
func (q *batchQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.events)
	}
	q.mu.Unlock()
	<-q.done
}
