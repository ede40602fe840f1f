package provider

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// fake is an adapter with nothing but Do and Supports.
type fake struct{ id int }

func (fake) Do(context.Context, *Request) (*Response, error) { return nil, errors.New("not called") }
func (fake) Supports(Op) bool                                { return false }

// cloud names where it goes beyond base_url (Endpointer) and probes
// (Prober).
type cloud struct {
	fake
	where string
}

func (c cloud) Endpoint() string            { return c.where }
func (c cloud) Probe(context.Context) error { return errors.New("probed " + c.where) }

// changed sets v, a field of Descriptor or Config, to a value other than
// its own.
func changed(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-other")
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(v.Int() + int64(time.Second))
		} else {
			v.SetInt(v.Int() + 1)
		}
	case reflect.Bool:
		v.SetBool(!v.Bool())
	default:
		t.Fatalf("%s: a field of kind %s: teach this test to change it", name, v.Kind())
	}
}

// TestEqualEveryFieldDecides: a reload keeps a provider's state only when
// its Descriptor is Equal to the one in force. Every field of Config and
// the adapter's endpoint decide; the adapter itself and the secrets do
// not (each reload builds them anew). A field added to Descriptor must be
// placed on one side here.
func TestEqualEveryFieldDecides(t *testing.T) {
	base := Descriptor{Name: "p", Type: "bedrock", Adapter: cloud{where: "us-east-1"}, Secrets: []string{"sk-1"},
		Config: Config{Name: "p", Type: "bedrock", BaseURL: "https://x.example", RPM: 1, TPM: 2, MaxConcurrency: 3,
			FirstTokenTimeout: time.Second, Timeout: time.Minute, Domain: "aws", MaxResponseBytes: 1 << 20}}
	if !base.Equal(base) {
		t.Fatal("a Descriptor is not Equal to itself")
	}
	decides := map[string]bool{"Name": true, "Type": true, "Config": true, "Adapter": false, "Secrets": false}
	dt := reflect.TypeFor[Descriptor]()
	for i := range dt.NumField() {
		name := dt.Field(i).Name
		want, known := decides[name]
		if !known {
			t.Errorf("Descriptor.%s: say whether it decides Equal (a reload keeps the provider's state)", name)
			continue
		}
		if name == "Config" {
			ct := reflect.TypeFor[Config]()
			for j := range ct.NumField() {
				d := base
				changed(t, "Config."+ct.Field(j).Name, reflect.ValueOf(&d.Config).Elem().Field(j))
				if d.Equal(base) || base.Equal(d) {
					t.Errorf("Config.%s changed and the Descriptors are still Equal", ct.Field(j).Name)
				}
			}
			continue
		}
		d := base
		switch name {
		case "Adapter":
			d.Adapter = cloud{fake: fake{id: 1}, where: "us-east-1"} // another adapter, same endpoint
		case "Secrets":
			d.Secrets = []string{"sk-2"}
		default:
			changed(t, name, reflect.ValueOf(&d).Elem().Field(i))
		}
		if got := d.Equal(base); got == want {
			t.Errorf("Descriptor.%s changed: Equal = %v, want %v", name, got, !want)
		}
	}
	moved := base
	moved.Adapter = cloud{where: "us-west-2"}
	if moved.Equal(base) {
		t.Error("the adapter's endpoint changed (another region) and the Descriptors are still Equal")
	}
}

// TestEndpointAndProbe: what the Descriptor reads of its adapter.
func TestEndpointAndProbe(t *testing.T) {
	plain := Descriptor{Adapter: fake{}}
	if plain.Endpoint() != "" || plain.Probe() != nil {
		t.Errorf("an adapter with neither: endpoint %q, probe %v; want none", plain.Endpoint(), plain.Probe() != nil)
	}
	c := Descriptor{Adapter: cloud{where: "eu"}}
	if c.Endpoint() != "eu" {
		t.Errorf("Endpoint() = %q, want the adapter's", c.Endpoint())
	}
	if p := c.Probe(); p == nil || p(context.Background()).Error() != "probed eu" {
		t.Error("Probe() is not the adapter's probe")
	}
}
