package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// rig is the Responses API on a front door whose model m is served by a
// simulated provider, with the given store (nil: in memory).
func rig(t *testing.T, st store.Store) *httptest.Server {
	t.Helper()
	a, err := simulated.New(provider.Config{Name: "sim"}, simulated.Config{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "sim", Model: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.Open(routing.Options{Providers: []provider.Descriptor{{Name: "sim", Type: "simulated", Adapter: a}}, Models: table,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(s.Dialect()))
	t.Cleanup(func() { srv.Close(); p.Close() })
	return srv
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStoredResponse: a stored response is read back as it was answered,
// its input listed, deleted once, and gone afterwards with OpenAI's 404;
// store: false keeps nothing.
func TestStoredResponse(t *testing.T) {
	srv := rig(t, nil)
	status, body := do(t, "POST", srv.URL+"/v1/responses", `{"model":"m","input":"My name is Ada."}`)
	if status != 200 {
		t.Fatalf("POST: %d %s", status, body)
	}
	var r struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" {
		t.Fatalf("POST answered %s (%v)", body, err)
	}
	if status, got := do(t, "GET", srv.URL+"/v1/responses/"+r.ID, ""); status != 200 || !strings.Contains(got, `"id":"`+r.ID+`"`) {
		t.Errorf("GET: %d %s", status, got)
	}
	status, items := do(t, "GET", srv.URL+"/v1/responses/"+r.ID+"/input_items", "")
	if status != 200 || !strings.Contains(items, `"object":"list"`) || !strings.Contains(items, "My name is Ada.") {
		t.Errorf("input_items: %d %s", status, items)
	}
	if status, got := do(t, "POST", srv.URL+"/v1/responses/"+r.ID+"/cancel", ""); status != 400 || !strings.Contains(got, "background") {
		t.Errorf("cancel of a finished response: %d %s", status, got)
	}
	if status, got := do(t, "DELETE", srv.URL+"/v1/responses/"+r.ID, ""); status != 200 || !strings.Contains(got, `"deleted":true`) {
		t.Errorf("DELETE: %d %s", status, got)
	}
	for _, method := range []string{"GET", "DELETE"} {
		if status, got := do(t, method, srv.URL+"/v1/responses/"+r.ID, ""); status != 404 || !strings.Contains(got, "not found") {
			t.Errorf("%s after DELETE: %d %s", method, status, got)
		}
	}

	_, body = do(t, "POST", srv.URL+"/v1/responses", `{"model":"m","input":"hi","store":false}`)
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if status, got := do(t, "GET", srv.URL+"/v1/responses/"+r.ID, ""); status != 404 {
		t.Errorf("store: false was stored: %d %s", status, got)
	}
}

// TestPreviousResponse: previous_response_id continues what the router
// stored; an id it does not hold is a 400 naming the field, before any
// provider is called.
func TestPreviousResponse(t *testing.T) {
	srv := rig(t, nil)
	_, body := do(t, "POST", srv.URL+"/v1/responses", `{"model":"m","input":"first"}`)
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if status, got := do(t, "POST", srv.URL+"/v1/responses", `{"model":"m","input":"second","previous_response_id":"`+r.ID+`"}`); status != 200 {
		t.Errorf("continued: %d %s", status, got)
	}
	status, got := do(t, "POST", srv.URL+"/v1/responses", `{"model":"m","input":"x","previous_response_id":"resp_nothere"}`)
	if status != 400 || !strings.Contains(got, `"param":"previous_response_id"`) {
		t.Errorf("unknown previous_response_id: %d %s", status, got)
	}
}

// failing is a store that cannot be reached.
type failing struct{}

var errDown = errors.New("store down")

func (failing) Get(context.Context, string) (*store.Record, error) { return nil, errDown }
func (failing) Put(context.Context, *store.Record) error           { return errDown }
func (failing) Delete(context.Context, string) error               { return errDown }

// TestStoreDown: a store that cannot answer is a 503 with Retry-After on
// its routes, never a 404 (the response may exist), and an answer it could
// not keep is still answered.
func TestStoreDown(t *testing.T) {
	srv := rig(t, failing{})
	for _, method := range []string{"GET", "DELETE"} {
		req, _ := http.NewRequest(method, srv.URL+"/v1/responses/resp_x", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s with the store down: %d, Retry-After %q", method, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if status, got := do(t, "POST", srv.URL+"/v1/responses", `{"model":"m","input":"hi"}`); status != 200 {
		t.Errorf("POST with the store down: %d %s", status, got)
	}
}

// TestCheckComesFirst: the body check is made by Decode's walk, and a
// body it refuses is answered with the check's refusal (intake.Check's
// status, param and message), before any problem of the request's own
// that comes earlier in the body, as when the check ran first.
func TestCheckComesFirst(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"model":7,`)
	for i := range jsonscan.MaxTopLevelKeys {
		fmt.Fprintf(&many, `"k%d":1,`, i)
	}
	many.WriteString(`"z":1}`)
	tests := []struct{ name, body string }{
		{"syntax after a bad model", `{"model":7,"input":"hi","x":[1,]}`},
		{"syntax after a bad item", `{"model":"m","input":[{"role":"robot","content":"hi"}],"x":tru}`},
		{"syntax in an item", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},]}]}`},
		{"syntax in a tool", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{"a":}}]}`},
		{"a missing comma", `{"model":"m" "input":"hi"}`},
		{"trailing data", `{"model":"m","input":"hi"}{}`},
		{"depth", `{"model":1,"x":` + strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1) + `}`},
		{"depth in input", `{"model":"m","input":[{"type":"reasoning","summary":` + strings.Repeat("[", jsonscan.MaxDepth) + strings.Repeat("]", jsonscan.MaxDepth) + `}]}`},
		{"a repeated key after a bad one", `{"model":7,"input":"hi","model":"m"}`},
		{"a repeated key", `{"model":"m","input":"hi","mod\u0065l":"x"}`},
		{"too many keys", many.String()},
		{"not UTF-8", "{\"model\":7,\"input\":\"\xff\"}"},
		{"not UTF-8 in a part", "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"\xff\"}]}]}"},
		{"a control character", "{\"model\":7,\"instructions\":\"a\nb\"}"},
		{"not an object", `[{"model":"m"}]`},
		{"null", `null`},
		{"spaces", `   `},
	}
	srv := rig(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := intake.Check([]byte(tt.body))
			if want == nil {
				t.Fatalf("the check takes %q", tt.body)
			}
			status, got := do(t, "POST", srv.URL+"/v1/responses", tt.body)
			var e struct {
				Error struct{ Type, Message string }
			}
			_ = json.Unmarshal([]byte(got), &e)
			if status != want.Status || e.Error.Type != want.Type || e.Error.Message != want.Message {
				t.Errorf("got %d %s; want the check's %d %s %q", status, got, want.Status, want.Type, want.Message)
			}
		})
	}
}
