package metrics

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docRow is one metric as docs/metrics.md lists it.
type docRow struct {
	Type   Type
	Labels []string
	Ours   bool
}

// readDocs parses the metric tables of docs/metrics.md: rows whose first
// cell is a backquoted metric name, "†" marking nodewright's own, and
// "*node*" in the labels standing for the per-node labels.
func readDocs(t *testing.T) map[string]docRow {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]docRow{}
	var nodeLabels []string // what *node* stands for, as the page says
	inNode := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "*node* stands for") {
			inNode = true
		}
		if inNode {
			for i, part := range strings.Split(line, "`") {
				if i%2 == 1 {
					nodeLabels = append(nodeLabels, part)
				}
			}
			inNode = line != "" && !strings.HasSuffix(line, ".")
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("docs/metrics.md: row of %d cells, want 4: %s", len(cells), line)
		}
		nameCell := strings.TrimSpace(cells[0])
		name := strings.Trim(strings.TrimSuffix(nameCell, " †"), "`")
		row := docRow{Type: Type(strings.TrimSpace(cells[1])), Ours: strings.HasSuffix(nameCell, "†")}
		for _, l := range strings.Split(cells[2], ",") {
			switch l = strings.TrimSpace(l); l {
			case "—":
			case "*node*":
				if len(nodeLabels) == 0 {
					t.Fatal("docs/metrics.md uses *node* before saying what it stands for")
				}
				row.Labels = append(row.Labels, nodeLabels...)
			default:
				row.Labels = append(row.Labels, strings.Trim(l, "`"))
			}
		}
		if _, dup := rows[name]; dup {
			t.Errorf("docs/metrics.md lists %s twice", name)
		}
		rows[name] = row
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestDocsListEveryMetric fails when docs/metrics.md and the metrics this
// package declares disagree on a name, a type, a label or the † mark.
func TestDocsListEveryMetric(t *testing.T) {
	docs := readDocs(t)
	for _, s := range Specs() {
		row, ok := docs[s.Name]
		if !ok {
			t.Errorf("%s is exported but docs/metrics.md does not list it", s.Name)
			continue
		}
		delete(docs, s.Name)
		if row.Type != s.Type {
			t.Errorf("%s: docs say %s, code %s", s.Name, row.Type, s.Type)
		}
		if got, want := sorted(row.Labels), sorted(s.Labels); !slices.Equal(got, want) {
			t.Errorf("%s: docs list labels %v, code %v", s.Name, got, want)
		}
		if row.Ours != s.Ours {
			t.Errorf("%s: docs mark it nodewright's own: %v, code: %v", s.Name, row.Ours, s.Ours)
		}
	}
	for name := range docs {
		t.Errorf("docs/metrics.md lists %s, which is not exported", name)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
