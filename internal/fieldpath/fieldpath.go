// Package fieldpath writes the paths that input errors give for a field, the
// way the API server writes them: spec.template.spec.containers[1].resources,
// requests[nvidia.com/gpu]. One spelling everywhere lets a user paste a path
// from one message into a search of another.
package fieldpath

import (
	"fmt"
	"regexp"
)

// Field is the path of field key in the object at path ("" at the top).
func Field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index is the path of item i in the list at path.
func Index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// plain matches a map key that reads unambiguously after a dot; others
// (karpenter.sh/do-not-disrupt, nvidia.com/gpu) are bracketed.
var plain = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Plain reports whether a map key may follow a dot.
func Plain(key string) bool { return plain.MatchString(key) }

// MapKey is the path of key in the map at path: dotted when plain,
// bracketed otherwise.
func MapKey(path, key string) string {
	if Plain(key) {
		return Field(path, key)
	}
	return Bracket(path, key)
}

// Bracket is the path of key in the map at path, always bracketed.
func Bracket(path, key string) string {
	return fmt.Sprintf("%s[%s]", path, key)
}
