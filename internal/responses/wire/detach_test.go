package wire

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestDetach: every field of every item and part is copied, nil and
// empty stay apart, and no string or raw byte of the copy lies in the
// memory the items pointed into (a request's body).
func TestDetach(t *testing.T) {
	body := []byte(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", 4) + `{"raw":true}`)
	s := string(body)
	next := 0
	sub := func() string { next += 3; return s[next-3 : next] }
	fill := func(v reflect.Value) {
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.String {
				f.SetString(sub())
			}
		}
	}
	var items []Item
	for range 2 {
		var it Item
		fill(reflect.ValueOf(&it).Elem())
		var p Part
		fill(reflect.ValueOf(&p).Elem())
		it.Parts = []Part{p}
		it.Raw = body[len(body)-13:]
		items = append(items, it)
	}
	items = append(items, Item{Type: "message", Parts: []Part{}, Raw: []byte{}}, Item{Type: "message"})

	got := Detach(items)
	if !reflect.DeepEqual(got, items) {
		t.Fatalf("Detach changed the items:\n got %#v\nwant %#v", got, items)
	}
	if got[2].Parts == nil || got[2].Raw == nil || got[3].Parts != nil || got[3].Raw != nil {
		t.Errorf("nil and empty not kept apart: %#v %#v", got[2], got[3])
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	hi := lo + uintptr(len(s))
	inBody := func(p unsafe.Pointer) bool { return uintptr(p) >= lo && uintptr(p) < hi }
	blo := uintptr(unsafe.Pointer(&body[0]))
	var check func(v reflect.Value, path string)
	check = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.String:
			if v.Len() > 0 && inBody(unsafe.Pointer(unsafe.StringData(v.String()))) {
				t.Errorf("%s points into the body", path)
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				if v.Len() > 0 && uintptr(v.UnsafePointer()) >= blo && uintptr(v.UnsafePointer()) < blo+uintptr(len(body)) {
					t.Errorf("%s points into the body", path)
				}
				return
			}
			for i := range v.Len() {
				check(v.Index(i), path)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				check(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	}
	check(reflect.ValueOf(got), "items")
	if Detach(nil) != nil {
		t.Error("Detach(nil) is not nil")
	}
}
