package aws

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseTOML reads the part of TOML that Bottlerocket settings are written
// in: [dotted.table] headers, dotted and quoted keys, basic and literal
// strings, decimal integers, booleans, arrays (across lines) and inline
// tables. Anything else (floats, dates, multi-line strings, arrays of
// tables) is refused with its line, rather than guessed at. Tables are
// map[string]any; values string, int64, bool or []any.
func parseTOML(src string) (map[string]any, error) {
	p := &tomlParser{src: src}
	if !utf8.ValidString(src) {
		return nil, errors.New("TOML is not valid UTF-8")
	}
	root := map[string]any{}
	headers, closed := map[string]bool{}, map[string]bool{}
	current, path := root, []string(nil)
	for {
		p.skipBlank()
		if p.eof() {
			return root, nil
		}
		at := p.pos
		if p.consume('[') {
			if p.peek() == '[' {
				return nil, p.errorAt(at, "arrays of tables ([[...]]) are not supported")
			}
			keys, err := p.key()
			if err != nil {
				return nil, err
			}
			if !p.consume(']') {
				return nil, p.errorAt(p.pos, "expected ] to close the table header")
			}
			t, err := p.descend(root, nil, keys, closed, at)
			if err != nil {
				return nil, err
			}
			id := strings.Join(keys, "\x00")
			if headers[id] {
				return nil, p.errorAt(at, "table [%s] is defined twice", tomlKeyPath(keys))
			}
			headers[id] = true
			current, path = t, keys
		} else if err := p.keyValue(current, path, closed); err != nil {
			return nil, err
		}
		if err := p.endOfLine(); err != nil {
			return nil, err
		}
	}
}

type tomlParser struct {
	src string
	pos int
}

func (p *tomlParser) eof() bool { return p.pos >= len(p.src) }

func (p *tomlParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.pos]
}

func (p *tomlParser) consume(c byte) bool {
	if p.peek() == c && !p.eof() {
		p.pos++
		return true
	}
	return false
}

func (p *tomlParser) errorAt(pos int, format string, args ...any) error {
	line := 1 + strings.Count(p.src[:min(pos, len(p.src))], "\n")
	return fmt.Errorf("TOML line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *tomlParser) skipSpace() {
	for p.peek() == ' ' || p.peek() == '\t' {
		p.pos++
	}
}

// skipBlank skips spaces, line ends and comments.
func (p *tomlParser) skipBlank() {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '#':
			p.skipComment()
		default:
			return
		}
	}
}

func (p *tomlParser) skipComment() {
	for !p.eof() && p.peek() != '\n' {
		p.pos++
	}
}

func (p *tomlParser) endOfLine() error {
	p.skipSpace()
	if p.peek() == '#' {
		p.skipComment()
	}
	if p.eof() || p.consume('\n') || strings.HasPrefix(p.src[p.pos:], "\r\n") {
		return nil
	}
	return p.errorAt(p.pos, "unexpected %q: one key = value or [table] per line", p.src[p.pos:p.pos+1])
}

// key reads a dotted key: a, a.b, "a.b".c.
func (p *tomlParser) key() ([]string, error) {
	var keys []string
	for {
		p.skipSpace()
		start := p.pos
		var k string
		if c := p.peek(); c == '"' || c == '\'' {
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			k = s
		} else {
			for !p.eof() && isBareKeyByte(p.peek()) {
				p.pos++
			}
			if p.pos == start {
				return nil, p.errorAt(start, "expected a key")
			}
			k = p.src[start:p.pos]
		}
		keys = append(keys, k)
		p.skipSpace()
		if !p.consume('.') {
			return keys, nil
		}
	}
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// keyValue reads key = value into t, whose path from its root is base.
func (p *tomlParser) keyValue(t map[string]any, base []string, closed map[string]bool) error {
	at := p.pos
	keys, err := p.key()
	if err != nil {
		return err
	}
	if !p.consume('=') {
		return p.errorAt(p.pos, "expected = after %s", tomlKeyPath(keys))
	}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return err
	}
	parent, err := p.descend(t, base, keys[:len(keys)-1], closed, at)
	if err != nil {
		return err
	}
	full := append(slices.Clip(base), keys...)
	last := keys[len(keys)-1]
	if _, ok := parent[last]; ok {
		return p.errorAt(at, "%s is defined twice", tomlKeyPath(full))
	}
	parent[last] = v
	if _, ok := v.(map[string]any); ok {
		closed[strings.Join(full, "\x00")] = true
	}
	return nil
}

// descend returns the table at keys below t, making the missing ones.
func (p *tomlParser) descend(t map[string]any, base, keys []string, closed map[string]bool, at int) (map[string]any, error) {
	path := slices.Clip(base)
	for _, k := range keys {
		path = append(path, k)
		if closed[strings.Join(path, "\x00")] {
			return nil, p.errorAt(at, "%s is an inline table, complete as written", tomlKeyPath(path))
		}
		switch v := t[k].(type) {
		case nil:
			m := map[string]any{}
			t[k] = m
			t = m
		case map[string]any:
			t = v
		default:
			return nil, p.errorAt(at, "%s is a value, not a table", tomlKeyPath(path))
		}
	}
	return t, nil
}

func (p *tomlParser) value() (any, error) {
	switch p.peek() {
	case '"', '\'':
		return p.str()
	case '[':
		return p.array()
	case '{':
		return p.inlineTable()
	}
	start := p.pos
	for !p.eof() && !strings.ContainsRune(" \t\r\n,]}#", rune(p.peek())) {
		p.pos++
	}
	tok := p.src[start:p.pos]
	switch tok {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "":
		return nil, p.errorAt(start, "expected a value")
	}
	if n, ok := tomlInteger(tok); ok {
		return n, nil
	}
	return nil, p.errorAt(start, "%q is not a supported value: write a quoted string, a decimal integer, true or false, an array or a table", tok)
}

// tomlInteger reads a decimal integer: an optional sign, no leading zeros,
// underscores only between digits.
func tomlInteger(tok string) (int64, bool) {
	digits := strings.TrimLeft(tok, "+-")
	if len(tok)-len(digits) > 1 || digits == "" || digits[0] == '0' && len(digits) > 1 ||
		digits[0] == '_' || digits[len(digits)-1] == '_' || strings.Contains(digits, "__") {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(tok, "_", ""), 10, 64)
	return n, err == nil
}

// str reads a one-line basic ("...") or literal ('...') string.
func (p *tomlParser) str() (string, error) {
	start, q := p.pos, p.peek()
	if strings.HasPrefix(p.src[p.pos:], strings.Repeat(string(q), 3)) {
		return "", p.errorAt(start, "multi-line strings are not supported")
	}
	p.pos++
	var s strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return "", p.errorAt(start, "string not closed on its line")
		}
		switch c := p.peek(); {
		case c == q:
			p.pos++
			return s.String(), nil
		case c == '\\' && q == '"':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			s.WriteRune(r)
		case c < 0x20 && c != '\t' || c == 0x7f:
			return "", p.errorAt(p.pos, "control character %q in a string", c)
		default:
			s.WriteByte(c)
			p.pos++
		}
	}
}

func (p *tomlParser) escape() (rune, error) {
	at := p.pos
	p.pos++ // the backslash
	c := p.peek()
	p.pos++
	if r, ok := map[byte]rune{'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\'}[c]; ok {
		return r, nil
	}
	n := map[byte]int{'u': 4, 'U': 8}[c]
	if n == 0 || p.pos+n > len(p.src) {
		return 0, p.errorAt(at, "unknown escape in a string")
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return 0, p.errorAt(at, "bad unicode escape in a string")
	}
	p.pos += n
	return rune(v), nil
}

func (p *tomlParser) array() ([]any, error) {
	start := p.pos
	p.pos++ // [
	out := []any{}
	for {
		p.skipBlank()
		if p.eof() {
			return nil, p.errorAt(start, "array not closed")
		}
		if p.consume(']') {
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipBlank()
		if p.eof() {
			return nil, p.errorAt(start, "array not closed")
		}
		if !p.consume(',') && p.peek() != ']' {
			return nil, p.errorAt(p.pos, "expected , or ] in an array")
		}
	}
}

func (p *tomlParser) inlineTable() (map[string]any, error) {
	p.pos++ // {
	t, closed := map[string]any{}, map[string]bool{}
	p.skipSpace()
	if p.consume('}') {
		return t, nil
	}
	for {
		p.skipSpace()
		if err := p.keyValue(t, nil, closed); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.consume('}') {
			return t, nil
		}
		if !p.consume(',') {
			return nil, p.errorAt(p.pos, "expected , or } in an inline table, which must fit on one line")
		}
	}
}

// encodeTOML writes doc with its keys sorted, each table under a header.
func encodeTOML(doc map[string]any) (string, error) {
	var s strings.Builder
	if err := writeTOMLTable(&s, nil, doc); err != nil {
		return "", err
	}
	return s.String(), nil
}

func writeTOMLTable(s *strings.Builder, path []string, t map[string]any) error {
	var values, tables []string
	for _, k := range slices.Sorted(maps.Keys(t)) {
		if _, ok := t[k].(map[string]any); ok {
			tables = append(tables, k)
		} else {
			values = append(values, k)
		}
	}
	// A table holding only tables needs no header of its own; an empty one
	// does, to stay.
	if len(path) > 0 && (len(values) > 0 || len(tables) == 0) {
		if s.Len() > 0 {
			s.WriteString("\n")
		}
		fmt.Fprintf(s, "[%s]\n", tomlKeyPath(path))
	}
	for _, k := range values {
		v, err := tomlValue(t[k])
		if err != nil {
			return fmt.Errorf("%s: %w", tomlKeyPath(append(slices.Clip(path), k)), err)
		}
		fmt.Fprintf(s, "%s = %s\n", tomlKey(k), v)
	}
	for _, k := range tables {
		if err := writeTOMLTable(s, append(slices.Clip(path), k), t[k].(map[string]any)); err != nil {
			return err
		}
	}
	return nil
}

func tomlValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return tomlString(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case []any:
		items := make([]string, len(v))
		for i := range v {
			item, err := tomlValue(v[i])
			if err != nil {
				return "", err
			}
			items[i] = item
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case map[string]any: // only inside an array
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			item, err := tomlValue(v[k])
			if err != nil {
				return "", err
			}
			kv = append(kv, tomlKey(k)+" = "+item)
		}
		if len(kv) == 0 {
			return "{}", nil
		}
		return "{ " + strings.Join(kv, ", ") + " }", nil
	}
	return "", fmt.Errorf("cannot write %T as TOML", v)
}

func tomlKey(k string) string {
	if k != "" && strings.IndexFunc(k, func(r rune) bool { return r > 0x7f || !isBareKeyByte(byte(r)) }) < 0 {
		return k
	}
	return tomlString(k)
}

func tomlKeyPath(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = tomlKey(k)
	}
	return strings.Join(out, ".")
}

func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
