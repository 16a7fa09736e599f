package request

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// collectionVerb tells whether a GET of a collection is a list or a watch, and the name an
// exact metadata.name field selector gives it, exactly as upstream's RequestInfoFactory: it
// decodes the query's ListOptions with apimachinery's parameter codec, whose watch is true
// for any first value but "0" and "false" (any case: `?watch`, `?watch=`, `?watch=yes` and
// `?watch=f` are watches); when the query does not decode, the verb falls back to the first
// watch value alone and no name is taken. This is the one decision: authorization, audit,
// metrics, the in-flight limit, the request timeout and the handler all read it from Info.
//
// The full decode (about 3µs) runs only when its outcome can change the answer: with a
// field selector that names an object, or a watch value that only Unicode case folding
// makes "false" (such as "falſe", which the codec reads as false and the fallback as true).
func collectionVerb(q url.Values) (verb, name string) {
	values := q["watch"]
	watch, folded := watchValue(values)
	name = selectorName(q["fieldSelector"])
	if (name != "" || folded) && !listOptionsDecode(q) {
		watch, name = fallbackWatch(values), ""
	}
	if watch {
		return "watch", name
	}
	return "list", name
}

// watchValue is the parameter codec's verdict on the watch values
// (runtime.Convert_Slice_string_To_bool); folded reports a value it reads as false that is
// not "false" in ASCII lower case.
func watchValue(values []string) (watch, folded bool) {
	if len(values) == 0 {
		return false, false
	}
	v := values[0]
	if v == "0" || strings.EqualFold(v, "false") {
		return false, v != "0" && strings.ToLower(v) != "false"
	}
	return true, false
}

// fallbackWatch is upstream's verdict when the query does not decode: any first watch value
// but "0" and "false" (lower-cased) is a watch.
func fallbackWatch(values []string) bool {
	if len(values) == 0 {
		return false
	}
	switch strings.ToLower(values[0]) {
	case "0", "false":
		return false
	}
	return true
}

// selectorName is the object name an exact metadata.name field selector (the first value,
// as the codec reads it) requires, when it is a valid path segment; "" otherwise.
func selectorName(values []string) string {
	if len(values) == 0 || values[0] == "" {
		return ""
	}
	sel, err := fields.ParseSelector(values[0])
	if err != nil {
		return ""
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	if !ok || len(content.IsPathSegmentName(name)) != 0 {
		return ""
	}
	return name
}

// listOptionsDecode reports whether the query decodes as upstream's RequestInfoFactory
// decodes it.
func listOptionsDecode(q url.Values) bool {
	var opts metainternalversion.ListOptions
	return metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts) == nil
}
