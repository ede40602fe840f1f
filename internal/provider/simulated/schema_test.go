package simulated

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

// zodPerson is what the openai Node SDK's zodResponseFormat sends for a
// zod object (openai 6.30.1, zod 3): definitions, a $ref to them, the
// OpenAPI nullable, anyOf with null, a type list, const, formats, a
// pattern and bounds.
const zodPerson = `{"type":"object","properties":{"name":{"type":"string","minLength":3,"maxLength":10},"age":{"type":"integer","minimum":18,"maximum":99},"email":{"type":"string","format":"email"},"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3},"kind":{"type":"string","enum":["a","b"]},"nick":{"type":"string","nullable":true},"when":{"type":"string","format":"date-time"},"steps":{"type":"array","items":{"type":"object","properties":{"explanation":{"type":"string"},"output":{"type":"string"}},"required":["explanation","output"],"additionalProperties":false}},"first":{"$ref":"#/definitions/person_properties_steps_items"},"maybe":{"anyOf":[{"type":"boolean"},{"type":"null"}]},"u":{"type":["number","string"]},"lit":{"type":"string","const":"x"},"uuid":{"type":"string","format":"uuid"},"re":{"type":"string","pattern":"^[a-z]+$"},"ip":{"type":"string","anyOf":[{"format":"ipv4"},{"format":"ipv6"}]},"cuid":{"type":"string","pattern":"^[cC][^\\s-]{8,}$"},"b64":{"type":"string","contentEncoding":"base64"},"tup":{"type":"array","minItems":2,"maxItems":2,"items":[{"type":"string"},{"type":"number"}]},"rec":{"type":"object","additionalProperties":{"type":"number"}}},"required":["name","age","email","tags","kind","nick","when","steps","first","maybe","u","lit","uuid","re","ip","cuid","b64","tup","rec"],"additionalProperties":false,"definitions":{"person_properties_steps_items":{"type":"object","properties":{"explanation":{"$ref":"#/definitions/person_properties_steps_items_properties_explanation"},"output":{"$ref":"#/definitions/person_properties_steps_items_properties_output"}},"required":["explanation","output"],"additionalProperties":false},"person_properties_steps_items_properties_explanation":{"type":"string"},"person_properties_steps_items_properties_output":{"type":"string"}},"$schema":"http://json-schema.org/draft-07/schema#"}`

// TestSchemaValue generates a value for each schema, checks it with the
// tests' own validator (schemaCheck) and, where given, against the exact
// value expected.
func TestSchemaValue(t *testing.T) {
	tests := []struct {
		name, schema string
		want         string // exact value; "" checks validity only
	}{
		{"no parameters", `{}`, `{}`},
		{"empty object", `{"type":"object","properties":{}}`, `{}`},
		{"weather tool", `{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`,
			`{"city":"city","unit":"celsius"}`},
		{"strict", `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},"ok":{"type":"boolean"},"z":{"type":"null"}},"required":["q","n","x","ok","z"],"additionalProperties":false}`,
			`{"q":"q","n":1,"x":1.5,"ok":true,"z":null}`},
		{"untyped properties", `{"properties":{"a":{"minimum":5},"b":{"items":{"type":"integer"}},"c":{}}}`, `{"a":5,"b":[1],"c":"c"}`},
		{"top-level array", `{"type":"array","items":{"type":"integer"},"minItems":2}`, `[1,2]`},

		{"integer range", `{"type":"integer","minimum":18,"maximum":99}`, `18`},
		{"integer below", `{"type":"integer","maximum":-5}`, `-5`},
		{"integer open range", `{"type":"integer","exclusiveMinimum":3,"exclusiveMaximum":5}`, `4`},
		{"integer draft 4 exclusive", `{"type":"integer","minimum":1,"exclusiveMinimum":true}`, `2`},
		{"integer multiple", `{"type":"integer","minimum":12,"multipleOf":5}`, `15`},
		{"integer fractional bounds", `{"type":"integer","minimum":2.5,"maximum":3.5}`, `3`},
		{"number positive", `{"type":"number","exclusiveMinimum":0}`, `1.5`},
		{"number negative", `{"type":"number","exclusiveMaximum":0}`, `-1`},
		{"number narrow", `{"type":"number","minimum":2.5,"maximum":2.7}`, `2.5`},
		{"number open narrow", `{"type":"number","exclusiveMinimum":2.5,"exclusiveMaximum":2.7}`, ``},
		{"number cents", `{"type":"number","minimum":0.015,"multipleOf":0.01}`, ``},
		{"number draft 4 exclusive max", `{"type":"number","maximum":1.5,"exclusiveMaximum":true}`, ``},

		{"string lengths", `{"type":"object","properties":{"long":{"type":"string","minLength":10},"short":{"type":"string","maxLength":2},"zero":{"type":"string","maxLength":0}},"required":["long","short","zero"]}`,
			`{"long":"longxxxxxx","short":"sh","zero":""}`},
		{"formats", `{"type":"object","properties":{"a":{"format":"date-time"},"b":{"format":"date"},"c":{"format":"time"},"d":{"format":"duration"},"e":{"format":"email"},"f":{"format":"hostname"},"g":{"format":"ipv4"},"h":{"format":"ipv6"},"i":{"format":"uri"},"j":{"format":"uuid"}}}`, ``},
		{"pattern", `{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"}`, `"AAA-0000"`},
		{"pattern alternation", `{"type":"string","pattern":"^(foo|bar)+(\\.[a-z]{2,3})?$"}`, `"foo"`},
		{"pattern negated class", `{"type":"string","pattern":"^[^a-zA-Z0-9]+$"}`, `" "`},
		{"pattern RE2 cannot parse", `{"type":"string","pattern":"^(?=x)\\w+$","minLength":1}`, `"text"`},
		{"base64", `{"type":"string","contentEncoding":"base64"}`, `"dGV4dA=="`},

		{"unique strings", `{"type":"array","items":{"type":"string"},"minItems":3,"uniqueItems":true}`, `["text","text 2","text 3"]`},
		{"unique integers", `{"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"minItems":4,"uniqueItems":true}`, `[1,2,3,4]`},
		{"unique enum", `{"type":"array","items":{"enum":["r","g","b"]},"minItems":3,"uniqueItems":true}`, `["r","g","b"]`},
		{"unique objects", `{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"on":{"type":"boolean"}},"required":["id","on"]},"minItems":2,"uniqueItems":true}`,
			`[{"id":1,"on":true},{"id":2,"on":false}]`},
		{"unique dates", `{"type":"array","items":{"type":"string","format":"date"},"minItems":3,"uniqueItems":true}`, ``},
		{"no items allowed", `{"type":"array","items":{"type":"string"},"maxItems":0}`, `[]`},
		{"prefixItems", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":{"type":"boolean"},"minItems":3}`, `["text",2,true]`},
		{"draft 7 tuple", `{"type":"array","items":[{"type":"string"},{"type":"number"}],"minItems":2,"maxItems":2}`, `["text",2.5]`},

		{"nested", `{"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string"},"address":{"type":"object","properties":{"zip":{"type":"string","pattern":"^\\d{5}$"}},"required":["zip"]}},"required":["name","address"]},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}},"required":["sku","qty"]}}},"required":["user","items"]}`,
			`{"user":{"name":"name","address":{"zip":"00000"}},"items":[{"sku":"sku","qty":1}]}`},
		{"$defs", `{"type":"object","properties":{"color":{"$ref":"#/$defs/Color"}},"required":["color"],"$defs":{"Color":{"type":"string","enum":["red","green"]}}}`, `{"color":"red"}`},
		{"pydantic v1 allOf ref", `{"title":"M","type":"object","properties":{"c":{"allOf":[{"$ref":"#/definitions/C"}],"description":"a color"}},"required":["c"],"definitions":{"C":{"title":"C","enum":["x","y"],"type":"string"}}}`, `{"c":"x"}`},
		{"escaped ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b%20c"}},"required":["a"],"$defs":{"a/b c":{"type":"integer","minimum":7}}}`, `{"a":7}`},
		{"recursive tree", `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}},"required":["name","children"]}`, ``},
		{"anyOf nullable", `{"type":"object","properties":{"a":{"anyOf":[{"type":"null"},{"type":"string","minLength":2}]}},"required":["a"]}`, `{"a":"ax"}`},
		{"type list with null first", `{"type":["null","integer"],"minimum":3}`, `3`},
		{"only null", `{"type":["null"]}`, `null`},
		{"oneOf", `{"oneOf":[{"type":"string","format":"email"},{"type":"integer"}]}`, `"user@example.com"`},
		{"discriminated union", `{"type":"object","properties":{"shape":{"anyOf":[{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number","exclusiveMinimum":0}},"required":["kind","r"],"additionalProperties":false},{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"number"}},"required":["kind","side"]}]}},"required":["shape"]}`,
			`{"shape":{"kind":"circle","r":1.5}}`},
		{"anyOf adding to properties", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"anyOf":[{"required":["b"]},{"required":["a"]}],"additionalProperties":false}`, `{"a":"a","b":1}`},
		{"allOf merge", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"$ref":"#/$defs/B"}],"$defs":{"B":{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}}}`, `{"a":"a","b":1}`},
		{"allOf of strings", `{"allOf":[{"type":"string"},{"minLength":1}]}`, `"text"`},
		{"const object", `{"const":{"a":[1, 2]}}`, `{"a":[1,2]}`},
		{"enum of objects", `{"enum":[{"k": "v"},{"k":"w"}]}`, `{"k":"v"}`},
		{"required without property", `{"type":"object","properties":{},"required":["x"],"additionalProperties":{"type":"boolean"}}`, `{"x":true}`},
		{"minProperties", `{"type":"object","additionalProperties":{"type":"integer"},"minProperties":2}`, `{"property_1":1,"property_2":1}`},
		{"escaped names", `{"type":"object","properties":{"a.b":{"type":"string"},"q\"uote":{"type":"integer"}},"required":["a.b","q\"uote"]}`, `{"a.b":"a.b","q\"uote":1}`},
		{"zod person", zodPerson, ``},
		// What the Python SDK sends for a pydantic model (README's example).
		{"pydantic City", `{"properties":{"name":{"title":"Name","type":"string"},"population":{"title":"Population","type":"integer"},"tags":{"items":{"type":"string"},"title":"Tags","type":"array"}},"required":["name","population","tags"],"title":"City","type":"object","additionalProperties":false}`,
			`{"name":"name","population":1,"tags":["tags"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schemaValue(gjson.Parse(tt.schema))
			if err := schemaCheck([]byte(tt.schema), got); err != nil {
				t.Errorf("value %s breaks the schema: %v", got, err)
			}
			if tt.want != "" && string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if again := schemaValue(gjson.Parse(tt.schema)); !bytes.Equal(again, got) {
				t.Errorf("not deterministic: %s then %s", got, again)
			}
		})
	}
}

// TestSchemaValueBounded: schemas that ask for a huge or endless value
// get a bounded one, in JSON, quickly.
func TestSchemaValueBounded(t *testing.T) {
	for _, schema := range []string{
		`{"type":"array","items":{"type":"string","minLength":100000},"minItems":1000000000}`,
		`{"type":"string","minLength":1000000000}`,
		`{"$ref":"#"}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`,
		`{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`,
		`{"type":"object","properties":{"a":{"$ref":"#"},"b":{"$ref":"#"},"c":{"$ref":"#"}},"required":["a","b","c"]}`,
		`{"allOf":[{"$ref":"#"},{"type":"object"}]}`,
		`{"type":"string","pattern":"^a{1000}b{1000}$"}`,
		`{"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"string"},"minItems":500},"minItems":500},"minItems":500}`,
	} {
		got := schemaValue(gjson.Parse(schema))
		if !json.Valid(got) || len(got) > 4<<20 {
			t.Errorf("%s: %d bytes, valid JSON %v; want valid JSON within 4 MiB", schema, len(got), json.Valid(got))
		}
	}
}

// TestSchemaCheckRejects keeps the tests' validator honest: each value
// breaks its schema and must be refused, or TestSchemaValue proves
// nothing.
func TestSchemaCheckRejects(t *testing.T) {
	for _, tt := range []struct{ schema, value string }{
		{`{"type":"object","required":["a"]}`, `{}`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"b":1}`},
		{`{"type":"object","additionalProperties":{"type":"integer"}}`, `{"b":1.5}`},
		{`{"type":"object","minProperties":1}`, `{}`},
		{`{"type":"integer"}`, `1.5`},
		{`{"type":["string","null"]}`, `1`},
		{`{"type":"string"}`, `null`},
		{`{"minimum":2}`, `1`},
		{`{"maximum":2}`, `3`},
		{`{"exclusiveMinimum":2}`, `2`},
		{`{"exclusiveMaximum":2}`, `2`},
		{`{"minimum":2,"exclusiveMinimum":true}`, `2`},
		{`{"multipleOf":5}`, `12`},
		{`{"minLength":3}`, `"ab"`},
		{`{"maxLength":1}`, `"äb"`},
		{`{"pattern":"^\\d+$"}`, `"12a"`},
		{`{"format":"date-time"}`, `"2025-01-01"`},
		{`{"format":"email"}`, `"user"`},
		{`{"format":"uuid"}`, `"00000000-0000-0000-0000-000000000000"`},
		{`{"format":"ipv4"}`, `"::1"`},
		{`{"enum":["a","b"]}`, `"c"`},
		{`{"const":{"a":1}}`, `{"a":2}`},
		{`{"minItems":2}`, `[1]`},
		{`{"maxItems":0}`, `[1]`},
		{`{"uniqueItems":true}`, `[{"a":1},{"a":1}]`},
		{`{"items":{"type":"string"}}`, `["a",1]`},
		{`{"prefixItems":[{"type":"string"}]}`, `[1]`},
		{`{"items":[{"type":"string"}],"additionalItems":false}`, `["a","b"]`},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`},
		{`{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1`},
		{`{"allOf":[{"type":"integer"},{"minimum":5}]}`, `3`},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"type":"string"}}}`, `1`},
		{`{"$ref":"#/$defs/missing"}`, `1`},
		{`{"type":"string","nullable":true}`, `1`},
	} {
		if err := schemaCheck([]byte(tt.schema), []byte(tt.value)); err == nil {
			t.Errorf("%s accepted by %s", tt.value, tt.schema)
		}
	}
}
