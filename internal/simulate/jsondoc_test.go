package simulate

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestJSONFieldsAreDocumented: every field of the -o json document is named
// in docs/simulate.md's "JSON output" section (pods.daemonSet was not).
func TestJSONFieldsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/simulate.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## JSON output")
	if !ok {
		t.Fatal(`docs/simulate.md has no "## JSON output" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, name := range jsonNames(reflect.TypeOf(Result{}), "") {
		field := name[strings.LastIndex(name, ".")+1:]
		if !strings.Contains(section, "`"+field+"`") && !strings.Contains(section, "`"+field+"[]`") {
			t.Errorf("JSON field %s is not in docs/simulate.md's JSON output section", name)
		}
	}
}

// jsonNames lists the JSON names of t's fields and, for structs (and
// slices of them), their fields', as path.name.
func jsonNames(t reflect.Type, path string) []string {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, path+name)
		if f.Type.Name() != "Duration" {
			out = append(out, jsonNames(f.Type, path+name+".")...)
		}
	}
	return out
}
