package jsonvalue

import "reflect"

// Equal reports whether a and b are equal JSON values, as reflect.DeepEqual does, without
// its reflection for the types unstructured objects hold (others go to reflect.DeepEqual).
// Like DeepEqual it tells a nil map or slice from an empty one, and NaN from itself.
func Equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case int64:
		bi, ok := b.(int64)
		return ok && a == bi
	case float64:
		bf, ok := b.(float64)
		return ok && a == bf
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) || (a == nil) != (bm == nil) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !Equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) || (a == nil) != (bs == nil) {
			return false
		}
		for i := range a {
			if !Equal(a[i], bs[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
