package fakekit

import (
	"cmp"
	"net/http"
	"reflect"
	"strings"
)

// PreviewOf reads which preview a request is for: a Host
// <port>-<id>.<domain> (PortHost), or a path /preview/<port>-<id>/… on the
// fake itself (a local stack's previews, whose hosts do not resolve).
func PreviewOf(r *http.Request, domain string) (port int, id string, ok bool) {
	if port, id, ok = PortHost(r.Host, domain); ok {
		return port, id, ok
	}
	if rest, found := strings.CutPrefix(r.URL.Path, "/preview/"); found {
		label, _, _ := strings.Cut(rest, "/")
		return PortHost(label+"."+domain, domain)
	}
	return 0, "", false
}

// JSONFields returns the JSON names of the fields of the struct v (a
// request body's type): each field's json tag name, or its Go name when
// the tag has none; fields tagged "-" are left out. What SplitFields,
// DecodeObject and ReadObject take as the fields an API knows.
func JSONFields(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "-" && f.IsExported() {
			out = append(out, cmp.Or(name, f.Name))
		}
	}
	return out
}
