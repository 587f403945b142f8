package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Load reads files, or directories searched recursively for *.yaml, *.yml
// and *.json, and returns the objects it could use with a Problem for each
// it could not. Files are read in the order the paths are given, a
// directory's in lexical order (as filepath.WalkDir walks it), so the
// result does not depend on the file system, and where an object is
// defined twice the first is the one of the earlier path. A path that cannot be read at all is a Problem
// too; the caller decides whether an empty Set is fatal.
func Load(paths ...string) (*Set, []Problem) { return LoadOnto(Base{}, paths...) }

// Base is objects read before any file, such as a live cluster's: each
// document one object as kubectl get -o json prints it.
type Base struct {
	// Origin names the objects' source in problems, where a file name
	// would be.
	Origin string
	Docs   [][]byte
}

// LoadOnto is Load over base: base's objects are read first and go
// through the same decoding, defaults, checks and workload expansion as a
// file's, and an object of a file replaces base's object of the same kind,
// namespace and name.
func LoadOnto(base Base, paths ...string) (*Set, []Problem) {
	l := &loader{set: &Set{}}
	l.inBase = true
	for i, doc := range base.Docs {
		l.readDocument(base.Origin, i+1, doc)
	}
	l.inBase = false
	var files []string
	for _, p := range paths {
		found, err := manifestFiles(p)
		if err != nil {
			l.problem(Problem{File: p, Message: err.Error()})
			continue
		}
		files = append(files, found...)
	}
	files = dedupe(files)
	for _, f := range files {
		l.readFile(f)
	}
	l.set.Files = files
	l.validate()
	l.expand()
	return l.set, l.problems
}

type loader struct {
	set      *Set
	problems []Problem
	// inBase is set while base's objects are read; fromBase holds them,
	// so that a file's object of the same identity replaces them.
	inBase   bool
	fromBase map[any]bool
	// origin remembers the file each object came from, for problems found
	// after reading (references between objects).
	origin map[any]string
}

func (l *loader) problem(p Problem) { l.problems = append(l.problems, p) }

// manifestFiles lists the manifest files at path: path itself when it is a
// file (whatever its extension, since the user named it), else the
// manifests under it.
func manifestFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w; pass an existing file or directory with -f", path, errors.Unwrap(err))
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking directory %s: %w", path, err)
	}
	return out, nil
}

// dedupe keeps the first of each file named more than once (a file given
// both alone and inside a directory), in the order given.
func dedupe(files []string) []string {
	seen := map[string]bool{}
	out := files[:0]
	for _, f := range files {
		if k := filepath.Clean(f); !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	return out
}

// readFile reads every document of a file. A malformed document is a
// Problem; the documents after it are still read when the reader can find
// them.
func (l *loader) readFile(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		l.problem(Problem{File: file, Message: fmt.Sprintf("cannot read the file: %v", err)})
		return
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			l.problem(Problem{File: file, Message: fmt.Sprintf("document %d is not valid YAML: %v", doc, err)})
			return
		}
		l.readDocument(file, doc, raw)
	}
}

// readDocument reads one YAML or JSON document.
func (l *loader) readDocument(file string, doc int, raw []byte) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		l.problem(Problem{File: file, Message: fmt.Sprintf("document %d is not valid YAML or JSON: %v; check its indentation and quoting", doc, err)})
		return
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return // an empty document, between two "---"
	}
	l.readObject(file, doc, js)
}

// typeMeta is what tells an object's type, with a List's items.
type typeMeta struct {
	APIVersion string                           `json:"apiVersion"`
	Kind       string                           `json:"kind"`
	Metadata   struct{ Name, Namespace string } `json:"metadata"`
	Items      []json.RawMessage                `json:"items"`
}

func (l *loader) readObject(file string, doc int, js []byte) {
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		l.problem(Problem{File: file, Message: fmt.Sprintf("document %d is not a Kubernetes object: %v", doc, err)})
		return
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		l.problem(Problem{File: file, Kind: tm.Kind, Namespace: tm.Metadata.Namespace, Name: tm.Metadata.Name,
			Message: fmt.Sprintf("document %d has no apiVersion or kind; every object needs both, as kubectl get -o yaml prints them", doc)})
		return
	}
	if tm.Metadata.Namespace == "" && !clusterScoped[tm.Kind] {
		tm.Metadata.Namespace = "default"
	}
	if strings.HasSuffix(tm.Kind, "List") && tm.APIVersion == "v1" {
		for _, item := range tm.Items {
			l.readObject(file, doc, item)
		}
		return
	}
	k, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		l.problem(Problem{File: file, Kind: tm.Kind, Namespace: tm.Metadata.Namespace, Name: tm.Metadata.Name,
			Message: fmt.Sprintf("apiVersion %s kind %s is not something the simulator reads (%s); remove it from the input or ignore this message",
				tm.APIVersion, tm.Kind, knownKinds())})
		return
	}
	if tm.Metadata.Name == "" {
		l.problem(Problem{File: file, Kind: tm.Kind, Namespace: tm.Metadata.Namespace,
			Message: fmt.Sprintf("document %d has no metadata.name; give the object a name", doc)})
		return
	}
	// nodewright's own kinds are checked against their CRDs as kube-apiserver
	// checks them, so that a file the API server would refuse (a budget of
	// "150%", an operator "Inn", a misspelt field) is refused here too,
	// with the field named, rather than simulated as something else.
	if msgs, err := checkCRD(tm.APIVersion+"/"+tm.Kind, js); err != nil || len(msgs) > 0 {
		if err != nil {
			msgs = []string{err.Error()}
		}
		l.problem(Problem{File: file, Kind: tm.Kind, Namespace: tm.Metadata.Namespace, Name: tm.Metadata.Name,
			Message: fmt.Sprintf("invalid object, which the API server would refuse: %s", strings.Join(msgs, "; "))})
		return
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := k.add(l, dec, file); err != nil {
		msg := fmt.Sprintf("invalid object: %v; fix the field against the %s %s schema", err, tm.APIVersion, tm.Kind)
		// A quantity's parse error names neither the field nor the value
		// ("unable to parse quantity's suffix"): find them.
		if bad := badQuantities(k.typ, js); len(bad) > 0 {
			msg = quantityMessage(bad)
		}
		l.problem(Problem{File: file, Kind: tm.Kind, Namespace: tm.Metadata.Namespace, Name: tm.Metadata.Name, Message: msg})
	}
}

// clusterScoped are the kinds without a namespace.
var clusterScoped = map[string]bool{"NodePool": true, "NodeClaim": true, "NodeOverlay": true, "KWOKNodeClass": true, "EC2NodeClass": true,
	"Node": true, "Namespace": true, "PersistentVolume": true, "StorageClass": true, "List": true}
