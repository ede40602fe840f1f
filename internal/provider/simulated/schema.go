package simulated

import (
	"encoding/base64"
	"math"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// Bounds of a generated value. The schema comes from the client, so a
// schema that asks for a million items, a string of a billion characters
// or a reference cycle gets a bounded value instead (not a valid one).
const (
	// schemaBudget is what one generated document may spend: a unit per
	// value, string byte, property name byte and byte of a copied const
	// or enum value. Once it is spent, optional properties and extra
	// items are left out and every further value is null.
	schemaBudget = 1 << 16
	// schemaShallow is the depth past which objects get only their
	// required properties and arrays only their minItems, so that a
	// recursive schema (a tree of nodes) ends.
	schemaShallow = 6
	// schemaDeepest is the depth at which generation writes null and
	// stops: reached only by required recursion or a $ref loop.
	schemaDeepest = 48
	// maxPatternRepeat bounds a pattern's x{n} when building a match.
	maxPatternRepeat = 256
)

// schemaValue returns JSON text valid against the JSON Schema schema, for
// the subset of JSON Schema that function parameters and structured
// outputs use (see generator). A schema that is absent or not an object
// gets an empty object: what a function without parameters takes.
// The value is a function of the schema alone.
func schemaValue(schema gjson.Result) []byte {
	if !schema.IsObject() {
		return []byte("{}")
	}
	g := generator{root: schema, budget: schemaBudget}
	if untyped(schema) {
		// Arguments and structured outputs are objects even when the
		// schema does not say so ({} is a function without parameters).
		g.object([]gjson.Result{schema}, 0, 0)
	} else {
		g.value(schema, "", 0, 0)
	}
	return g.out
}

// untyped reports whether s says nothing about the kind of its value.
func untyped(s gjson.Result) bool {
	for _, k := range [...]string{"type", `\$ref`, "const", "enum", "anyOf", "oneOf", "allOf"} {
		if s.Get(k).Exists() {
			return false
		}
	}
	return true
}

// generator writes one value for a schema, depth first, in the order the
// schema declares properties. The keywords it reads:
//   - $ref, a JSON pointer into the same document (#, #/$defs/…,
//     #/definitions/…); const; enum (the first value);
//   - anyOf and oneOf: the first branch that allows more than null,
//     merged with the schema's own properties when it has some; allOf:
//     the branches' object properties merged, or the first branch;
//   - type, a name or a list (the first that is not null); when absent,
//     guessed from the other keywords, "string" when nothing says;
//   - objects: properties, required, additionalProperties, minProperties;
//   - arrays: items, prefixItems, additionalItems, minItems, maxItems,
//     uniqueItems;
//   - strings: minLength, maxLength, pattern (a match built from RE2's
//     parse of it and checked; ignored when RE2 cannot parse it), format
//     (date-time, date, time, duration, email, hostname, ipv4, ipv6, uri,
//     uuid), contentEncoding base64;
//   - numbers: minimum, maximum, exclusiveMinimum and exclusiveMaximum
//     (numbers, or draft 4's booleans), multipleOf.
//
// Other keywords (not, if/then/else, patternProperties, dependencies,
// maxProperties, contains) are ignored. oneOf is treated as anyOf: a
// value matching two branches breaks it.
type generator struct {
	root   gjson.Result // the document $ref points into
	budget int          // values and string bytes left; see schemaBudget
	out    []byte
}

// value writes a value for s. name is the property the value is for
// ("" at the top and for items): strings are made from it. variant
// makes the items of one array differ (uniqueItems): item i gets i.
func (g *generator) value(s gjson.Result, name string, depth, variant int) {
	g.budget--
	if depth > schemaDeepest || g.budget < 0 {
		g.out = append(g.out, "null"...)
		return
	}
	if ref := s.Get(`\$ref`); ref.Type == gjson.String {
		g.value(g.resolve(ref.Str), name, depth+1, variant)
		return
	}
	if c := s.Get("const"); c.Exists() {
		g.budget -= len(c.Raw)
		g.out = appendCompact(g.out, c.Raw)
		return
	}
	if e := s.Get("enum").Array(); len(e) > 0 {
		c := e[variant%len(e)].Raw
		g.budget -= len(c)
		g.out = appendCompact(g.out, c)
		return
	}
	for _, k := range [...]string{"anyOf", "oneOf"} {
		if b := s.Get(k).Array(); len(b) > 0 {
			if s.Get("properties").Exists() {
				// Branches that add to an object's properties
				// (anyOf [{required: [a]}, {required: [b]}]).
				g.object([]gjson.Result{s, g.branch(b)}, depth, variant)
				return
			}
			g.value(g.branch(b), name, depth+1, variant)
			return
		}
	}
	if all := s.Get("allOf").Array(); len(all) > 0 {
		parts := append([]gjson.Result{s}, all...)
		if !g.anyObject(parts) {
			g.value(all[0], name, depth+1, variant)
			return
		}
		g.object(parts, depth, variant)
		return
	}
	switch schemaType(s) {
	case "object":
		g.object([]gjson.Result{s}, depth, variant)
	case "array":
		g.array(s, name, depth, variant)
	case "integer":
		g.out = appendNumber(g.out, number(s, true, variant))
	case "number":
		g.out = appendNumber(g.out, number(s, false, variant))
	case "boolean":
		g.out = strconv.AppendBool(g.out, variant%2 == 0)
	case "null":
		g.out = append(g.out, "null"...)
	default:
		str := g.text(s, name, variant)
		g.out, _ = openaiwire.Append(g.out, &str) // a string always encodes
	}
}

// resolve follows a $ref within the document. A reference it cannot
// follow (another document, a missing target) is the empty schema.
func (g *generator) resolve(ref string) gjson.Result {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return gjson.Result{}
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	cur := g.root
	for part := range strings.SplitSeq(strings.TrimPrefix(frag, "/"), "/") {
		if part == "" && frag == "" {
			break
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		if cur = cur.Get(gjson.Escape(part)); !cur.Exists() {
			return gjson.Result{}
		}
	}
	return cur
}

// branch is the branch of an anyOf or oneOf to generate: the first that
// does not only allow null (nullable fields are written anyOf [T, null]).
func (g *generator) branch(bs []gjson.Result) gjson.Result {
	for _, b := range bs {
		r := b
		for i := 0; i < 8 && r.Get(`\$ref`).Type == gjson.String; i++ {
			r = g.resolve(r.Get(`\$ref`).Str)
		}
		if schemaType(r) != "null" {
			return b
		}
	}
	return bs[0]
}

// anyObject reports whether one of parts ($refs followed once) is an
// object schema: allOf then merges them as objects.
func (g *generator) anyObject(parts []gjson.Result) bool {
	for _, p := range parts {
		if ref := p.Get(`\$ref`); ref.Type == gjson.String {
			p = g.resolve(ref.Str)
		}
		if t := p.Get("type"); t.Exists() && schemaType(p) == "object" || p.Get("properties").Exists() {
			return true
		}
	}
	return false
}

// schemaType is s's type: the first non-null name of type, "null" when
// that is all it allows, or a guess from the keywords present ("string"
// when nothing says otherwise).
func schemaType(s gjson.Result) string {
	t := s.Get("type")
	if t.Type == gjson.String {
		return t.Str
	}
	if t.IsArray() {
		ts := t.Array()
		for _, x := range ts {
			if x.Str != "null" {
				return x.Str
			}
		}
		if len(ts) > 0 {
			return "null"
		}
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if s.Get(k).Exists() {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "minProperties", "patternProperties"):
		return "object"
	case has("items", "prefixItems", "minItems", "maxItems", "uniqueItems"):
		return "array"
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return "number"
	}
	return "string"
}

// object writes an object with the properties of every schema in parts
// (one schema, or a schema and its allOf branches; $refs followed), the
// first declaration of a name winning. Shallower than schemaShallow, and
// while the budget lasts, every declared property is written; deeper, only
// the required ones. A required name no part declares gets a value for
// additionalProperties, and minProperties is met with more such names.
func (g *generator) object(parts []gjson.Result, depth, variant int) {
	type prop struct {
		name   string
		schema gjson.Result
	}
	var props []prop
	seen := map[string]bool{}
	required := map[string]bool{}
	var extra gjson.Result // additionalProperties of the first part that has it
	minProps := 0
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		if ref := p.Get(`\$ref`); ref.Type == gjson.String && len(parts) < 64 {
			parts = append(parts, g.resolve(ref.Str))
			continue
		}
		if i > 0 && len(parts) < 64 {
			parts = append(parts, p.Get("allOf").Array()...)
		}
		p.Get("properties").ForEach(func(k, v gjson.Result) bool {
			if !seen[k.Str] {
				seen[k.Str] = true
				props = append(props, prop{k.Str, v})
			}
			return true
		})
		for _, r := range p.Get("required").Array() {
			required[r.Str] = true
		}
		if ap := p.Get("additionalProperties"); ap.Exists() && !extra.Exists() {
			extra = ap
		}
		minProps = max(minProps, int(p.Get("minProperties").Int()))
	}
	// Required names in the order the schemas list them, for the ones
	// no properties declare.
	for _, p := range parts {
		for _, r := range p.Get("required").Array() {
			if !seen[r.Str] {
				seen[r.Str] = true
				props = append(props, prop{r.Str, extraSchema(extra)})
			}
		}
	}
	g.out = append(g.out, '{')
	n := 0
	write := func(name string, s gjson.Result) {
		if n > 0 {
			g.out = append(g.out, ',')
		}
		g.budget -= len(name)
		g.out, _ = openaiwire.Append(g.out, &name)
		g.out = append(g.out, ':')
		g.value(s, name, depth+1, variant)
		n++
	}
	for _, p := range props {
		if required[p.name] || (depth < schemaShallow && g.budget > 0) {
			write(p.name, p.schema)
		}
	}
	if extra.Type != gjson.False {
		for i := 1; n < minProps && g.budget > 0; i++ {
			if name := "property_" + strconv.Itoa(i); !seen[name] {
				write(name, extraSchema(extra))
			}
		}
	}
	g.out = append(g.out, '}')
}

// extraSchema is the schema of a property that properties does not
// declare: additionalProperties when it is a schema, else any value.
func extraSchema(ap gjson.Result) gjson.Result {
	if ap.IsObject() {
		return ap
	}
	return gjson.Result{}
}

// array writes minItems items, or one when that is 0, maxItems allows it
// and the array is above schemaShallow. Positional schemas (prefixItems,
// or draft 7's items as a list) come first; the other items follow items
// (additionalItems in draft 7's tuple form). Item i gets variant i, so
// that items differ where the schema leaves room (uniqueItems).
func (g *generator) array(s gjson.Result, name string, depth, variant int) {
	prefix := s.Get("prefixItems").Array()
	rest := s.Get("items")
	if rest.IsArray() {
		prefix, rest = rest.Array(), s.Get("additionalItems")
	}
	n := int(min(s.Get("minItems").Int(), maxPatternRepeat*4))
	maxItems := s.Get("maxItems")
	if n == 0 && depth < schemaShallow && (!maxItems.Exists() || maxItems.Int() > 0) {
		n = 1
	}
	if len(prefix) > n && (!maxItems.Exists() || int64(len(prefix)) <= maxItems.Int()) {
		n = len(prefix)
	}
	g.out = append(g.out, '[')
	for i := range n {
		if i > 0 {
			if g.budget <= 0 {
				break
			}
			g.out = append(g.out, ',')
		}
		item := extraSchema(rest)
		if i < len(prefix) {
			item = prefix[i]
		}
		g.value(item, name, depth+1, variant+i)
	}
	g.out = append(g.out, ']')
}

// text is the string for s: a match of its pattern, a sample of its
// format, or else the property's name (or "text") with the variant's
// number, cut or padded to minLength and maxLength.
func (g *generator) text(s gjson.Result, name string, variant int) string {
	if p := s.Get("pattern"); p.Type == gjson.String {
		if str, ok := patternMatch(p.Str); ok {
			g.budget -= len(str)
			return str
		}
	}
	if str, ok := formatSample(s.Get("format").Str, variant); ok {
		return str
	}
	if s.Get("contentEncoding").Str == "base64" {
		return base64.StdEncoding.EncodeToString([]byte(g.text(s.Get("contentSchema"), name, variant)))
	}
	str := name
	if str == "" {
		str = "text"
	}
	if variant > 0 {
		str += " " + strconv.Itoa(variant+1)
	}
	minLen := int(max(min(s.Get("minLength").Int(), int64(max(g.budget, 0))), 0))
	if ml := s.Get("maxLength"); ml.Exists() && int64(utf8.RuneCountInString(str)) > ml.Int() {
		r := []rune(str)
		str = string(r[:max(ml.Int(), 0)])
	}
	if k := minLen - utf8.RuneCountInString(str); k > 0 {
		str += strings.Repeat("x", k)
	}
	g.budget -= len(str)
	return str
}

// formatSample is a fixed valid value for a string format; variant makes
// the values of one array differ.
func formatSample(format string, variant int) (string, bool) {
	v := variant % 10
	d := strconv.Itoa(v)
	switch format {
	case "date-time":
		return "2025-01-0" + strconv.Itoa(v%9+1) + "T12:00:00Z", true
	case "date":
		return "2025-01-0" + strconv.Itoa(v%9+1), true
	case "time":
		// No offset: zod's time() refuses one, pydantic takes either.
		return "12:00:0" + d, true
	case "duration":
		return "P" + strconv.Itoa(v+1) + "D", true
	case "email", "idn-email":
		return "user" + strings.Repeat(d, min(variant, 1)) + "@example.com", true
	case "hostname", "idn-hostname":
		return "host" + d + ".example.com", true
	case "ipv4":
		return "192.0.2." + strconv.Itoa(v+1), true
	case "ipv6":
		return "2001:db8::" + strconv.Itoa(v+1), true
	case "uri", "url", "iri":
		return "https://example.com/" + d, true
	case "uri-reference", "iri-reference":
		return "/" + d, true
	case "uuid":
		return "00000000-0000-4000-8000-00000000000" + d, true
	}
	return "", false
}

// patternMatch builds a string that the regular expression pattern
// matches, from RE2's parse of it: the first branch of each alternation,
// the fewest repetitions, a letter or digit from each class. ok is false
// when RE2 cannot parse the pattern (lookarounds, backreferences) or the
// string built does not match (word boundaries).
func patternMatch(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !buildMatch(&b, re.Simplify(), 0) {
		return "", false
	}
	m, err := regexp.MatchString(pattern, b.String())
	return b.String(), err == nil && m
}

func buildMatch(b *strings.Builder, re *syntax.Regexp, depth int) bool {
	if depth > 64 || b.Len() > maxPatternRepeat*4 {
		return false
	}
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		r, ok := classRune(re.Rune)
		if !ok {
			return false
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		return buildMatch(b, re.Sub[0], depth+1)
	case syntax.OpPlus:
		return buildMatch(b, re.Sub[0], depth+1)
	case syntax.OpRepeat:
		if re.Min > maxPatternRepeat {
			return false
		}
		for range re.Min {
			if !buildMatch(b, re.Sub[0], depth+1) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !buildMatch(b, sub, depth+1) {
				return false
			}
		}
	case syntax.OpAlternate:
		return buildMatch(b, re.Sub[0], depth+1)
	}
	// OpStar, OpQuest, OpEmptyMatch and the anchors add nothing.
	return true
}

// classRune picks a rune of a character class (pairs of inclusive
// ranges): a, A or 0 when the class has it, else its first printable rune.
func classRune(ranges []rune) (rune, bool) {
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range "aA0" {
		if in(r) {
			return r, true
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := max(ranges[i], ' '); r <= ranges[i+1] && r < ranges[i]+128; r++ {
			if unicode.IsPrint(r) {
				return r, true
			}
		}
	}
	return 0, false
}

// number picks a number that s's bounds and multipleOf allow: 1 (1.5 for
// a number), plus the variant, moved inside the bounds when it is not.
func number(s gjson.Result, integer bool, variant int) float64 {
	lo, hi := math.Inf(-1), math.Inf(1)
	var loEx, hiEx bool
	if m := s.Get("minimum"); m.Type == gjson.Number {
		lo = m.Num
	}
	if m := s.Get("maximum"); m.Type == gjson.Number {
		hi = m.Num
	}
	switch m := s.Get("exclusiveMinimum"); m.Type {
	case gjson.Number: // draft 6 and later: the bound itself
		if m.Num >= lo {
			lo, loEx = m.Num, true
		}
	case gjson.True: // draft 4: minimum is exclusive
		loEx = true
	}
	switch m := s.Get("exclusiveMaximum"); m.Type {
	case gjson.Number:
		if m.Num <= hi {
			hi, hiEx = m.Num, true
		}
	case gjson.True:
		hiEx = true
	}
	if integer {
		if loEx {
			lo, loEx = math.Floor(lo)+1, false
		} else {
			lo = math.Ceil(lo)
		}
		if hiEx {
			hi, hiEx = math.Ceil(hi)-1, false
		} else {
			hi = math.Floor(hi)
		}
	}
	in := func(x float64) bool {
		return (x > lo || x == lo && !loEx) && (x < hi || x == hi && !hiEx)
	}
	x := 1.5
	if integer {
		x = 1
	}
	if !in(x + float64(variant)) {
		switch {
		case x < lo || x == lo && loEx:
			x = lo
			if loEx {
				x = lo + 1
				if !in(x) {
					x = lo + (hi-lo)/2
				}
			}
		case x > hi || x == hi && hiEx:
			x = hi
			if hiEx {
				x = hi - 1
				if !in(x) {
					x = lo + (hi-lo)/2
				}
			}
		}
		if integer {
			x = math.Ceil(x)
		}
	} else {
		x += float64(variant)
	}
	if m := s.Get("multipleOf"); m.Type == gjson.Number && m.Num > 0 {
		for _, c := range [...]float64{math.Ceil(x/m.Num) * m.Num, math.Floor(x/m.Num) * m.Num, math.Ceil(lo/m.Num) * m.Num} {
			if in(c) {
				return c
			}
		}
	}
	return x
}

// appendNumber writes x as JSON: an integer without a fraction when it is
// one, else the shortest form; 0 for what JSON cannot hold.
func appendNumber(dst []byte, x float64) []byte {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return append(dst, '0')
	case x == math.Trunc(x) && math.Abs(x) < 1<<53:
		return strconv.AppendInt(dst, int64(x), 10)
	}
	return strconv.AppendFloat(dst, x, 'g', -1, 64)
}

// appendCompact appends the JSON text raw without insignificant spaces.
func appendCompact(dst []byte, raw string) []byte {
	inStr, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		dst = append(dst, c)
	}
	return dst
}
