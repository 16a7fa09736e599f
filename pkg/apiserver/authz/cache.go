package authz

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// source is what a cache reads: a registry store's List and Watch.
type source interface {
	List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error)
}

// reflect keeps a local copy of one kind in step with etcd until ctx ends, like client-go's
// reflector: list, replace everything, then watch from the list's revision; after any watch
// error it lists again. synced is closed after the first complete list.
func reflect(ctx context.Context, log *slog.Logger, what string, src source, replace func([]runtime.Object), apply func(watch.EventType, runtime.Object), synced chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		rv, err := relist(ctx, src, replace)
		if err == nil {
			if first {
				close(synced)
				first = false
			}
			err = follow(ctx, src, rv, apply)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Debug("authorization cache: relisting", "kind", what, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func relist(ctx context.Context, src source, replace func([]runtime.Object)) (string, error) {
	list, err := src.List(ctx, "", &metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", err
	}
	replace(items)
	la, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return la.GetResourceVersion(), nil
}

func follow(ctx context.Context, src source, rv string, apply func(watch.EventType, runtime.Object)) error {
	w, err := src.Watch(ctx, "", &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errWatchClosed
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				apply(ev.Type, ev.Object)
			case watch.Error:
				return errWatchClosed
			}
		}
	}
}

type watchClosed struct{}

func (watchClosed) Error() string { return "watch closed" }

var errWatchClosed error = watchClosed{}
