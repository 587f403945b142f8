package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/fieldpath"
)

// checkTimelineFields reads data as a generic document and checks every key
// and value against the Timeline type, field by field, so that an error
// says where it is: the event as users count them ("event 3 (at 6h)"), the
// key, and for an unknown key the keys allowed there. yaml.UnmarshalStrict
// alone says only `json: unknown field "scael"`, without the event, and
// a value's error (a duration that does not parse) without the field.
//
// Keys match fields as encoding/json matches them (exactly, else regardless
// of case), so that this accepts what UnmarshalStrict accepts. A document
// that is not YAML, or not a mapping, is left to UnmarshalStrict.
func checkTimelineFields(data []byte) error {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil
	}
	return checkFields(reflect.TypeFor[Timeline](), doc, "")
}

var eventType = reflect.TypeFor[Event]()

// checkFields checks v, decoded from JSON, against type t; path is where v
// is, "" at the top.
func checkFields(t reflect.Type, v any, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	obj, isObj := v.(map[string]any)
	items, isList := v.([]any)
	switch {
	case t.Kind() == reflect.Struct && isObj && !hasUnmarshaler(t):
		fields := jsonFieldNames(t)
		for _, k := range sortedKeys(obj) {
			name, ft, ok := fieldOf(t, fields, k)
			if !ok {
				return fmt.Errorf("%sunknown key %q; the keys of %s are %s", prefix(path), k, whatIs(t, path), strings.Join(fields, ", "))
			}
			if err := checkFields(ft, obj[k], join(path, name)); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Slice && isList:
		for i, item := range items {
			at := fieldpath.Index(path, i)
			if t.Elem() == eventType {
				// Users count events from 1 and find them by their time.
				at = rawEventLabel(i, item)
			}
			if err := checkFields(t.Elem(), item, at); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Map && isObj:
		for _, k := range sortedKeys(obj) {
			if err := checkFields(t.Elem(), obj[k], mapKey(path, k)); err != nil {
				return err
			}
		}
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
		if t == reflect.TypeFor[time.Time]() {
			// time.Time's error quotes Go's layout ("2006-01-02T15:04:05Z07:00").
			return fmt.Errorf("%s%s is not an RFC 3339 instant; give one such as \"2026-01-05T00:00:00Z\"", prefix(path), raw)
		}
		return fmt.Errorf("%s%s", prefix(path), valueError(err))
	}
	return nil
}

// hasUnmarshaler reports whether t decodes itself (Duration, time.Time):
// its value is checked whole, not as a mapping of fields.
func hasUnmarshaler(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]())
}

// jsonFieldNames are the JSON names of t's fields, in the order declared,
// which is the order docs/simulate.md lists them in.
func jsonFieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// fieldOf finds the field of t that key names.
func fieldOf(t reflect.Type, names []string, key string) (string, reflect.Type, bool) {
	find := func(match func(string) bool) (string, reflect.Type, bool) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && match(name) {
				return name, f.Type, true
			}
		}
		return "", nil, false
	}
	if name, ft, ok := find(func(n string) bool { return n == key }); ok {
		return name, ft, ok
	}
	return find(func(n string) bool { return strings.EqualFold(n, key) })
}

// whatIs names the mapping at path for "the keys of ... are".
func whatIs(t reflect.Type, path string) string {
	switch {
	case path == "":
		return "a timeline"
	case t == eventType:
		return "an event"
	}
	if i := strings.LastIndexAny(path, ".:"); i >= 0 {
		return strings.TrimSpace(path[i+1:])
	}
	return path
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// join is the path of key in the mapping at path. An event's label is
// followed by a colon, as in the messages of validate: "event 3 (at 6h):
// scale.replicas".
func join(path, key string) string {
	switch {
	case path == "":
		return key
	case strings.HasPrefix(path, "event ") && !strings.Contains(path, ":"):
		return path + ": " + key
	}
	return fieldpath.Field(path, key)
}

// mapKey is fieldpath.MapKey with join's event labels.
func mapKey(path, key string) string {
	if fieldpath.Plain(key) {
		return join(path, key)
	}
	return fieldpath.Bracket(path, key)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// valueError says what is wrong with a value in words: encoding/json's
// type errors name Go types ("cannot unmarshal string into Go value of
// type int32").
func valueError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("got %s; give %s", yamlKind(te.Value), jsonKind(te.Type))
	}
	return err.Error()
}

// yamlKind names, as YAML calls it, the kind of value UnmarshalTypeError
// reports in JSON's words ("object", "number 1.5").
func yamlKind(value string) string {
	switch word, _, _ := strings.Cut(value, " "); word {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "bool":
		return "true or false"
	case "number":
		return "a number"
	case "string":
		return "a string"
	}
	return value
}

// jsonKind names the kind of value a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string (quote it: \"true\", \"1\")"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a " + t.String()
}

// rawEventLabel is eventLabel for an event not decoded yet.
func rawEventLabel(i int, v any) string {
	obj, _ := v.(map[string]any)
	when := func(key string) *Duration {
		for k, val := range obj {
			if strings.EqualFold(k, key) {
				if s, ok := val.(string); ok {
					if d, err := parseDuration(s); err == nil {
						return &Duration{d}
					}
				}
			}
		}
		return nil
	}
	return eventLabel(i, when("at"), when("every"))
}

// eventLabel names the i-th event (from 0) as users count and find them:
// "event 3 (at 6h)", "event 4 (every 10m)", "event 5".
func eventLabel(i int, at, every *Duration) string {
	switch {
	case at != nil:
		return fmt.Sprintf("event %d (at %s)", i+1, compact(at.Duration))
	case every != nil:
		return fmt.Sprintf("event %d (every %s)", i+1, compact(every.Duration))
	}
	return fmt.Sprintf("event %d", i+1)
}

// label names the i-th event in messages.
func (e Event) label(i int) string { return eventLabel(i, e.At, e.Every) }

// compact writes a duration as people write one: 6h, 1h30m, 10m, 90s as
// 1m30s.
func compact(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
