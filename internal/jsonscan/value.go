package jsonscan

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// The values of a walk's texts as gjson's Result reads them (Int, Bool,
// String), without gjson's parse of every number as a float64: its
// strconv frames (atof64 alone is 912 B) on top of a stream's waiting
// frames would grow the stream's goroutine past 8 KiB for good
// (docs/BENCHMARKS.md, "Memory per stream"). A plain integer, a string
// and a literal are read here; any other number goes to gjson, rarely.
// v is the text of one valid JSON value, as a walk reads it; "" is a
// value that is not there.

// AsInt is gjson's Int of the JSON value v: 0 for "".
func AsInt(v string) int64 {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	return gjson.Parse(v).Int()
}

// AsBool is gjson's Bool of the JSON value v: true for true, a non-zero
// number and a string strconv.ParseBool reads as true (in any case);
// false for "".
func AsBool(v string) bool {
	switch {
	case v == "" || v == "false" || v == "null" || v[0] == '{' || v[0] == '[':
		return false
	case v == "true":
		return true
	case v[0] != '"':
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n != 0
		}
	}
	return gjson.Parse(v).Bool()
}

// AsString is gjson's String of the JSON value v: a string's value, an
// object's or array's text, a literal's or a plain integer's own text;
// "" for null and for "".
func AsString(v string) string {
	switch {
	case v == "" || v == "null":
		return ""
	case v[0] == '"':
		return Unquote(v)
	case v[0] == '{' || v[0] == '[' || v == "true" || v == "false":
		return v
	}
	i := 0
	if v[0] == '-' {
		i++
	}
	for ; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return gjson.Parse(v).String() // a float: gjson formats it
		}
	}
	return v
}
