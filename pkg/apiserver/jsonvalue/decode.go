package jsonvalue

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNesting is encoding/json's limit on nested objects and arrays.
const maxNesting = 10000

// UnmarshalObject decodes a JSON object as k8s.io/apimachinery/pkg/util/json.Unmarshal
// decodes it into a map[string]any: objects as map[string]any, arrays as []any, numbers
// as int64 when they have no '.' and fit, else float64, strings with encoding/json's
// replacement of invalid UTF-8 and surrogates, the last of duplicate keys. It fails where
// that fails (syntax, a number float64 cannot hold, too deep, a value that is not an
// object), with its own words. null gives a nil map, as there.
func UnmarshalObject(data []byte) (map[string]any, error) {
	d := decoder{data: data}
	return d.object0()
}

// UnmarshalObjectStrict is UnmarshalObject that also reports duplicate keys, as
// sigs.k8s.io/json's UnmarshalStrict into a map[string]any does (what a strict JSON
// serializer does for an unstructured object): each a path such as "spec.ports[0].name",
// once, in the order met, at most 100.
func UnmarshalObjectStrict(data []byte) (map[string]any, []string, error) {
	d := decoder{data: data, strict: true}
	m, err := d.object0()
	if err != nil {
		return nil, nil, err
	}
	return m, d.duplicates, nil
}

// object0 decodes the whole input as one object (or null).
func (d *decoder) object0() (map[string]any, error) {
	d.space()
	if d.off < len(d.data) && d.data[d.off] != '{' && d.data[d.off] != 'n' {
		// Not an object: the library checks the whole syntax before its type error.
		if _, err := d.value(0); err != nil {
			return nil, err
		}
		return nil, errors.New("json: cannot unmarshal a non-object into map[string]any")
	}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.off != len(d.data) {
		return nil, d.syntax("after top-level value")
	}
	m, _ := v.(map[string]any)
	return m, nil
}

type decoder struct {
	data []byte
	off  int

	// strict: record duplicate keys by their path (path: where the decoder is).
	strict     bool
	path       []byte
	segments   int // keys and indexes in path (an empty key is one too)
	duplicates []string
	seen       map[string]bool
}

// duplicate records key, met again in the object at d.path.
func (d *decoder) duplicate(key string) {
	p := key
	if d.segments > 0 {
		p = string(d.path) + "." + key
	}
	if len(d.duplicates) >= 100 || d.seen[p] {
		return
	}
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	d.seen[p] = true
	d.duplicates = append(d.duplicates, p)
}

func (d *decoder) syntax(where string) error {
	if d.off >= len(d.data) {
		return errors.New("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %q %s (offset %d)", d.data[d.off], where, d.off)
}

func (d *decoder) space() {
	for d.off < len(d.data) {
		switch d.data[d.off] {
		case ' ', '\t', '\n', '\r':
			d.off++
		default:
			return
		}
	}
}

// value decodes the value at d.off (after white space), depth being how many objects and
// arrays it is in.
func (d *decoder) value(depth int) (any, error) {
	d.space()
	if d.off >= len(d.data) {
		return nil, d.syntax("")
	}
	switch c := d.data[d.off]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	default:
		return nil, d.syntax("looking for beginning of value")
	}
}

func (d *decoder) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if d.off >= len(d.data) || d.data[d.off] != lit[i] {
			return d.syntax("in literal " + lit)
		}
		d.off++
	}
	return nil
}

func (d *decoder) object(depth int) (any, error) {
	if depth > maxNesting {
		return nil, errors.New("exceeded max depth")
	}
	d.off++ // '{'
	m := map[string]any{}
	d.space()
	if d.off < len(d.data) && d.data[d.off] == '}' {
		d.off++
		return m, nil
	}
	for {
		d.space()
		if d.off >= len(d.data) || d.data[d.off] != '"' {
			return nil, d.syntax("looking for beginning of object key string")
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.off >= len(d.data) || d.data[d.off] != ':' {
			return nil, d.syntax("after object key")
		}
		d.off++
		n := len(d.path)
		if d.strict {
			if _, dup := m[k]; dup {
				d.duplicate(k)
			}
			if d.segments > 0 {
				d.path = append(d.path, '.')
			}
			d.path = append(d.path, k...)
		}
		v, err := d.element(depth, n)
		if err != nil {
			return nil, err
		}
		m[k] = v
		if end, err := d.next('}', "after object key:value pair"); end || err != nil {
			return m, err
		}
	}
}

// element decodes an object's value or an array's element, whose key or index strict
// decoding has put on d.path after its first n bytes.
func (d *decoder) element(depth, n int) (any, error) {
	if !d.strict {
		return d.value(depth)
	}
	d.segments++
	v, err := d.value(depth)
	d.path = d.path[:n]
	d.segments--
	return v, err
}

// next reads what follows an element: a comma (false), or end, which closes the object or
// array (true).
func (d *decoder) next(end byte, where string) (bool, error) {
	d.space()
	if d.off >= len(d.data) {
		return false, d.syntax("")
	}
	switch d.data[d.off] {
	case ',':
		d.off++
		return false, nil
	case end:
		d.off++
		return true, nil
	default:
		return false, d.syntax(where)
	}
}

func (d *decoder) array(depth int) (any, error) {
	if depth > maxNesting {
		return nil, errors.New("exceeded max depth")
	}
	d.off++ // '['
	a := []any{}
	d.space()
	if d.off < len(d.data) && d.data[d.off] == ']' {
		d.off++
		return a, nil
	}
	for {
		n := len(d.path)
		if d.strict {
			d.path = append(d.path, '[')
			d.path = strconv.AppendInt(d.path, int64(len(a)), 10)
			d.path = append(d.path, ']')
		}
		v, err := d.element(depth, n)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if end, err := d.next(']', "after array element"); end || err != nil {
			return a, err
		}
	}
}

// number decodes a number of JSON's grammar: int64 when it has no '.' and ParseInt takes
// it, else float64 (an error when out of its range), as the library's PreserveInts.
func (d *decoder) number() (any, error) {
	start := d.off
	digits := func() int {
		n := 0
		for d.off < len(d.data) && d.data[d.off] >= '0' && d.data[d.off] <= '9' {
			d.off++
			n++
		}
		return n
	}
	if d.data[d.off] == '-' {
		d.off++
	}
	if d.off < len(d.data) && d.data[d.off] == '0' {
		d.off++
	} else if digits() == 0 {
		return nil, d.syntax("in numeric literal")
	}
	dot := false
	if d.off < len(d.data) && d.data[d.off] == '.' {
		dot = true
		d.off++
		if digits() == 0 {
			return nil, d.syntax("after decimal point in numeric literal")
		}
	}
	if d.off < len(d.data) && (d.data[d.off] == 'e' || d.data[d.off] == 'E') {
		d.off++
		if d.off < len(d.data) && (d.data[d.off] == '+' || d.data[d.off] == '-') {
			d.off++
		}
		if digits() == 0 {
			return nil, d.syntax("in exponent of numeric literal")
		}
	}
	s := string(d.data[start:d.off])
	if !dot {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("json: cannot unmarshal number %s into Go value of type float64", s)
	}
	return f, nil
}

// knownKeys are object keys that most objects have: decoding one takes no allocation.
var knownKeys = map[string]string{}

func init() {
	for _, k := range []string{"apiVersion", "kind", "metadata", "name", "namespace", "uid", "resourceVersion",
		"generation", "creationTimestamp", "deletionTimestamp", "labels", "annotations", "ownerReferences",
		"finalizers", "generateName", "managedFields", "manager", "operation", "time", "fieldsType", "fieldsV1",
		"subresource", "spec", "status", "data", "items", "conditions", "type", "reason", "message",
		"lastTransitionTime", "observedGeneration", "replicas", "selector", "template", "containers", "image",
		"value", "key", ".", "f:metadata", "f:spec", "f:status", "f:data", "f:labels", "f:annotations"} {
		knownKeys[k] = k
	}
}

// key decodes an object key: a known one without escapes is not allocated again.
func (d *decoder) key() (string, error) {
	end := d.off + 1
	for end < len(d.data) && d.data[end] != '"' && d.data[end] != '\\' && d.data[end] >= ' ' && d.data[end] < utf8.RuneSelf {
		end++
	}
	if end < len(d.data) && d.data[end] == '"' {
		if k, ok := knownKeys[string(d.data[d.off+1:end])]; ok {
			d.off = end + 1
			return k, nil
		}
	}
	return d.string()
}

// string decodes the string at d.off as encoding/json's unquote does.
func (d *decoder) string() (string, error) {
	d.off++ // '"'
	start := d.off
	// The common case: nothing escaped, valid UTF-8.
	for d.off < len(d.data) {
		c := d.data[d.off]
		if c == '"' {
			s := string(d.data[start:d.off])
			d.off++
			return s, nil
		}
		if c == '\\' || c < ' ' || c >= utf8.RuneSelf {
			break
		}
		d.off++
	}
	b := make([]byte, d.off-start, d.off-start+16)
	copy(b, d.data[start:d.off])
	for {
		if d.off >= len(d.data) {
			return "", d.syntax("")
		}
		c := d.data[d.off]
		switch {
		case c == '"':
			d.off++
			return string(b), nil
		case c < ' ':
			return "", d.syntax("in string literal")
		case c == '\\':
			d.off++
			if d.off >= len(d.data) {
				return "", d.syntax("")
			}
			switch e := d.data[d.off]; {
			case escapes[e] != 0:
				b = append(b, escapes[e])
				d.off++
			case e == 'u':
				d.off++
				r := d.hex4()
				if r < 0 {
					return "", d.syntax("in \\u hexadecimal character escape")
				}
				if utf16.IsSurrogate(r) {
					// A valid pair is consumed whole; anything else is one replacement
					// character, and what follows is read on its own.
					if d.off+1 < len(d.data) && d.data[d.off] == '\\' && d.data[d.off+1] == 'u' {
						save := d.off
						d.off += 2
						r1 := d.hex4()
						if dec := utf16.DecodeRune(r, r1); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							break
						}
						d.off = save
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", d.syntax("in string escape code")
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.off++
		default:
			r, size := utf8.DecodeRune(d.data[d.off:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, unicode.ReplacementChar)
			} else {
				b = append(b, d.data[d.off:d.off+size]...)
			}
			d.off += size
		}
	}
}

// escapes are the characters that JSON's one-letter escapes stand for.
var escapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads four hexadecimal digits as a rune, -1 when they are not there.
func (d *decoder) hex4() rune {
	if d.off+4 > len(d.data) {
		return -1
	}
	var r rune
	for _, c := range d.data[d.off : d.off+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	d.off += 4
	return r
}
