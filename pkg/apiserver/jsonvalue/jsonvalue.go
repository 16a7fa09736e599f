// Package jsonvalue encodes the JSON values that unstructured objects hold (maps, slices,
// strings, int64, float64, bool, nil) byte for byte as encoding/json.Marshal does, without
// its reflection and its sorting of map keys through reflect values: a custom resource is
// encoded so on every write (for storage) and for every response that is not cached.
package jsonvalue

import (
	"encoding/json"
	"slices"
	"strconv"
)

// maxDepth is how deep Marshal nests before it leaves the value to encoding/json, which
// detects cycles.
const maxDepth = 1000

// Marshal returns what json.Marshal(v) returns.
func Marshal(v any) ([]byte, error) {
	b, err := appendValue(make([]byte, 0, 512), v, 0)
	if err != nil {
		return json.Marshal(v) // its error, as it words it
	}
	return b, nil
}

// appendValue appends v as json.Marshal encodes it. Anything but the types unstructured
// objects hold, and strings with anything to escape, is encoded by json.Marshal itself.
func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return appendMarshaled(dst, v)
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, v)
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // encoding/json sorts map keys by their bytes too
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendString(dst, k); err != nil {
				return dst, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, v[k], depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	default:
		return appendMarshaled(dst, v)
	}
}

// appendString appends s quoted; s with anything json.Marshal escapes (quotes, backslashes,
// control characters, <, > and &, non-ASCII) is left to it.
func appendString(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendMarshaled(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), nil
}

func appendMarshaled(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}
