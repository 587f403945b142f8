package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/fieldpath"
)

// quantityHint says what a valid quantity looks like; the parser's own
// errors ("unable to parse quantity's suffix", a regular expression) do not.
const quantityHint = `write a number with an optional suffix, such as "500m" or "2" for CPU and "512Mi", "4Gi" or "1G" for memory ` +
	`(suffixes: m for thousandths, k M G T P E for powers of 1000, Ki Mi Gi Ti Pi Ei for powers of 1024)`

// badQuantity is a field of an object whose value is not a quantity.
type badQuantity struct {
	// Path is the field as kubectl explain and the API server name it,
	// such as spec.containers[0].resources.requests.cpu.
	Path string
	// Value is the field's value as the JSON of the object has it.
	Value string
}

// badQuantities lists the fields of js, an object decoded into a value of
// type t, that hold a resource.Quantity which does not parse. encoding/json
// returns Quantity's parse error without saying where it was, so after a
// failed decode the object is walked alongside its Go type to find the
// field. Keys are matched to fields as encoding/json matches them (exactly,
// else regardless of case), so that the walk finds what the decode saw.
func badQuantities(t reflect.Type, js []byte) []badQuantity {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // keep numbers as written: 0.5 is a valid quantity, and the value is shown as given
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	var out []badQuantity
	walkQuantities(t, v, "", &out)
	return out
}

var quantityType = reflect.TypeFor[resource.Quantity]()

func walkQuantities(t reflect.Type, v any, path string, out *[]badQuantity) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantityType {
		raw, err := json.Marshal(v)
		if err != nil {
			return
		}
		var q resource.Quantity
		if q.UnmarshalJSON(raw) != nil {
			*out = append(*out, badQuantity{Path: path, Value: string(raw)})
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			if ft, ok := lookupField(fields, k); ok {
				walkQuantities(ft, obj[k], fieldpath.Field(path, k), out)
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range sortedKeys(obj) {
			walkQuantities(t.Elem(), obj[k], fieldpath.MapKey(path, k), out)
		}
	case reflect.Slice, reflect.Array:
		items, ok := v.([]any)
		if !ok {
			return
		}
		for i, item := range items {
			walkQuantities(t.Elem(), item, fieldpath.Index(path, i), out)
		}
	}
}

// jsonFields maps the JSON names of t's fields to their types, with the
// fields of embedded structs (TypeMeta, ObjectMeta's neighbours) promoted
// as encoding/json promotes them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				for k, v := range jsonFields(inner) {
					if _, set := out[k]; !set {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func lookupField(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if ft, ok := fields[key]; ok {
		return ft, true
	}
	for name, ft := range fields {
		if strings.EqualFold(name, key) {
			return ft, true
		}
	}
	return nil, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quantityMessage is the problem's message for the bad quantities found.
func quantityMessage(bad []badQuantity) string {
	parts := make([]string, len(bad))
	for i, b := range bad {
		parts[i] = fmt.Sprintf("%s: %s is not a quantity", b.Path, b.Value)
	}
	return fmt.Sprintf("invalid object: %s; %s", strings.Join(parts, "; "), quantityHint)
}
