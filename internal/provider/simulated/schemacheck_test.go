package simulated

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// schemaCheck reports the first way the JSON text doc breaks the JSON
// Schema schema, or nil. It is an independent validator for the keywords
// the generator claims to honour (see generator), written for the tests:
// a generated value is checked by code that does not share its logic.
// A pattern RE2 cannot compile is not checked.
func schemaCheck(schema, doc []byte) error {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if d.More() {
		return fmt.Errorf("more than one JSON value")
	}
	root := gjson.ParseBytes(schema)
	return checker{root}.check(root, v, "$", 0)
}

type checker struct{ root gjson.Result }

func (c checker) check(s gjson.Result, v any, at string, depth int) error {
	if depth > 200 {
		return fmt.Errorf("%s: schema nests too deep", at)
	}
	if s.Type == gjson.False {
		return fmt.Errorf("%s: schema false allows nothing", at)
	}
	if !s.IsObject() {
		return nil
	}
	if ref := s.Get(`\$ref`); ref.Exists() {
		t, err := c.resolve(ref.Str)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if err := c.check(t, v, at, depth+1); err != nil {
			return err
		}
	}
	if k := s.Get("const"); k.Exists() && !sameJSON(k.Raw, v) {
		return fmt.Errorf("%s: %v is not the const %s", at, v, k.Raw)
	}
	if e := s.Get("enum"); e.Exists() {
		ok := false
		for _, x := range e.Array() {
			ok = ok || sameJSON(x.Raw, v)
		}
		if !ok {
			return fmt.Errorf("%s: %v is not in the enum %s", at, v, e.Raw)
		}
	}
	for _, b := range s.Get("allOf").Array() {
		if err := c.check(b, v, at, depth+1); err != nil {
			return fmt.Errorf("allOf: %w", err)
		}
	}
	if a := s.Get("anyOf"); a.Exists() {
		var errs []string
		for _, b := range a.Array() {
			if err := c.check(b, v, at, depth+1); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) == len(a.Array()) {
			return fmt.Errorf("%s: matches no anyOf branch: %s", at, strings.Join(errs, "; "))
		}
	}
	if o := s.Get("oneOf"); o.Exists() {
		n := 0
		for _, b := range o.Array() {
			if c.check(b, v, at, depth+1) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d oneOf branches, want 1", at, n)
		}
	}
	if err := checkType(s, v, at); err != nil {
		return err
	}
	switch x := v.(type) {
	case map[string]any:
		return c.checkObject(s, x, at, depth)
	case []any:
		return c.checkArray(s, x, at, depth)
	case string:
		return checkString(s, x, at)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		return checkNumber(s, f, at)
	}
	return nil
}

func (c checker) resolve(ref string) (gjson.Result, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return gjson.Result{}, fmt.Errorf("$ref %q leaves the document", ref)
	}
	frag, _ = url.PathUnescape(frag)
	cur := c.root
	if frag == "" {
		return cur, nil
	}
	for _, p := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		if cur = cur.Get(gjson.Escape(p)); !cur.Exists() {
			return cur, fmt.Errorf("$ref %q points at nothing", ref)
		}
	}
	return cur, nil
}

// sameJSON compares a schema's raw JSON with a decoded value.
func sameJSON(raw string, v any) bool {
	var want any
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	if d.Decode(&want) != nil {
		return false
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(v)
	return bytes.Equal(a, b)
}

func checkType(s gjson.Result, v any, at string) error {
	t := s.Get("type")
	if !t.Exists() {
		return nil
	}
	if v == nil && s.Get("nullable").Bool() { // OpenAPI 3.0, sent by openai's zod helper
		return nil
	}
	names := []string{t.Str}
	if t.IsArray() {
		names = nil
		for _, n := range t.Array() {
			names = append(names, n.Str)
		}
	}
	for _, n := range names {
		if isType(n, v) {
			return nil
		}
	}
	return fmt.Errorf("%s: %#v is not of type %s", at, v, t.Raw)
}

func isType(name string, v any) bool {
	switch x := v.(type) {
	case nil:
		return name == "null"
	case bool:
		return name == "boolean"
	case string:
		return name == "string"
	case []any:
		return name == "array"
	case map[string]any:
		return name == "object"
	case json.Number:
		if name == "number" {
			return true
		}
		f, err := x.Float64()
		return name == "integer" && err == nil && f == math.Trunc(f)
	}
	return false
}

func (c checker) checkObject(s gjson.Result, o map[string]any, at string, depth int) error {
	for _, r := range s.Get("required").Array() {
		if _, ok := o[r.Str]; !ok {
			return fmt.Errorf("%s: required property %q missing", at, r.Str)
		}
	}
	if m := s.Get("minProperties"); m.Exists() && int64(len(o)) < m.Int() {
		return fmt.Errorf("%s: %d properties, want at least %d", at, len(o), m.Int())
	}
	if m := s.Get("maxProperties"); m.Exists() && int64(len(o)) > m.Int() {
		return fmt.Errorf("%s: %d properties, want at most %d", at, len(o), m.Int())
	}
	props := s.Get("properties")
	extra := s.Get("additionalProperties")
	for k, v := range o {
		p := props.Get(gjson.Escape(k))
		if !props.Exists() || !p.Exists() {
			if extra.Type == gjson.False {
				return fmt.Errorf("%s: property %q not allowed", at, k)
			}
			p = extra
		}
		if err := c.check(p, v, at+"."+k, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (c checker) checkArray(s gjson.Result, a []any, at string, depth int) error {
	if m := s.Get("minItems"); m.Exists() && int64(len(a)) < m.Int() {
		return fmt.Errorf("%s: %d items, want at least %d", at, len(a), m.Int())
	}
	if m := s.Get("maxItems"); m.Exists() && int64(len(a)) > m.Int() {
		return fmt.Errorf("%s: %d items, want at most %d", at, len(a), m.Int())
	}
	prefix := s.Get("prefixItems").Array()
	rest := s.Get("items")
	if rest.IsArray() {
		prefix, rest = rest.Array(), s.Get("additionalItems")
	}
	for i, v := range a {
		item := rest
		if i < len(prefix) {
			item = prefix[i]
		}
		if err := c.check(item, v, fmt.Sprintf("%s[%d]", at, i), depth+1); err != nil {
			return err
		}
	}
	if s.Get("uniqueItems").Bool() {
		seen := map[string]bool{}
		for i, v := range a {
			b, _ := json.Marshal(v)
			if seen[string(b)] {
				return fmt.Errorf("%s[%d]: %s repeats an earlier item (uniqueItems)", at, i, b)
			}
			seen[string(b)] = true
		}
	}
	return nil
}

var formatChecks = map[string]func(string) bool{
	"date-time": func(s string) bool { _, err := time.Parse(time.RFC3339, s); return err == nil },
	"date":      func(s string) bool { _, err := time.Parse(time.DateOnly, s); return err == nil },
	"time": func(s string) bool {
		return regexp.MustCompile(`^\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$`).MatchString(s)
	},
	"duration": regexp.MustCompile(`^P(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(\d+H)?(\d+M)?(\d+S)?)?$`).MatchString,
	"email":    regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`).MatchString,
	"hostname": regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`).MatchString,
	"ipv4":     func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is4() },
	"ipv6":     func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is6() },
	"uri":      func(s string) bool { u, err := url.Parse(s); return err == nil && u.Scheme != "" },
	"uuid":     regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString,
}

func checkString(s gjson.Result, x, at string) error {
	n := int64(utf8.RuneCountInString(x))
	if m := s.Get("minLength"); m.Exists() && n < m.Int() {
		return fmt.Errorf("%s: %q shorter than %d", at, x, m.Int())
	}
	if m := s.Get("maxLength"); m.Exists() && n > m.Int() {
		return fmt.Errorf("%s: %q longer than %d", at, x, m.Int())
	}
	if p := s.Get("pattern"); p.Exists() {
		if re, err := regexp.Compile(p.Str); err == nil && !re.MatchString(x) {
			return fmt.Errorf("%s: %q does not match %s", at, x, p.Str)
		}
	}
	if f := s.Get("format").Str; formatChecks[f] != nil && !formatChecks[f](x) {
		return fmt.Errorf("%s: %q is not a %s", at, x, f)
	}
	return nil
}

func checkNumber(s gjson.Result, x float64, at string) error {
	if m := s.Get("minimum"); m.Exists() && (x < m.Num || x == m.Num && s.Get("exclusiveMinimum").Type == gjson.True) {
		return fmt.Errorf("%s: %g below minimum %s", at, x, m.Raw)
	}
	if m := s.Get("maximum"); m.Exists() && (x > m.Num || x == m.Num && s.Get("exclusiveMaximum").Type == gjson.True) {
		return fmt.Errorf("%s: %g above maximum %s", at, x, m.Raw)
	}
	if m := s.Get("exclusiveMinimum"); m.Type == gjson.Number && x <= m.Num {
		return fmt.Errorf("%s: %g not above exclusiveMinimum %s", at, x, m.Raw)
	}
	if m := s.Get("exclusiveMaximum"); m.Type == gjson.Number && x >= m.Num {
		return fmt.Errorf("%s: %g not below exclusiveMaximum %s", at, x, m.Raw)
	}
	if m := s.Get("multipleOf"); m.Exists() {
		q := x / m.Num
		if math.Abs(q-math.Round(q)) > 1e-9 {
			return fmt.Errorf("%s: %g not a multiple of %s", at, x, m.Raw)
		}
	}
	return nil
}
