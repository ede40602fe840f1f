package admin

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

func adminHandler(t *testing.T, token string) http.Handler {
	t.Helper()
	sim, err := simulated.New(provider.Config{Name: "p"}, simulated.Config{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "p", Model: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := routing.New(routing.Options{Providers: []provider.Descriptor{{Name: "p", Type: "simulated", Adapter: sim}}, Models: table,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return Handler(Options{Routes: rt, Registry: prometheus.NewRegistry(), Ready: func() bool { return true }, Token: token})
}

// TestGuard: what the admin listener answers, by token setting, Host,
// credential and origin (docs/ARCHITECTURE.md, "Admin listener"): probes
// and scrapes are never held; without a token only a loopback Host reaches
// the rest (no DNS rebinding); with one, everything else requires it; a
// change must be JSON from the same site.
func TestGuard(t *testing.T) {
	const token = "s3cret-token"
	type req struct {
		method, url string
		header      map[string]string
		body        string
	}
	get := func(u string, h ...string) req {
		r := req{method: "GET", url: u, header: map[string]string{}}
		for i := 0; i+1 < len(h); i += 2 {
			r.header[h[i]] = h[i+1]
		}
		return r
	}
	post := func(u, ctype, body string, h ...string) req {
		r := get(u, h...)
		r.method, r.body = "POST", body
		if ctype != "" {
			r.header["Content-Type"] = ctype
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		token  string
		req    req
		status int
	}{
		{name: "no token, loopback address", req: get("http://127.0.0.1:9090/admin/providers"), status: 200},
		{name: "no token, localhost", req: get("http://localhost:9090/admin/providers"), status: 200},
		{name: "no token, IPv6 loopback", req: get("http://[::1]:9090/admin/keys"), status: 200},
		{name: "no token, a rebound name", req: get("http://evil.example:9090/admin/providers"), status: 421},
		{name: "no token, the pod's address", req: get("http://10.1.2.3:9090/admin/providers"), status: 421},
		{name: "no token, a name ending in localhost", req: get("http://notlocalhost:9090/admin/providers"), status: 421},
		{name: "no token, probes by pod address", req: get("http://10.1.2.3:9090/healthz"), status: 200},
		{name: "no token, readiness by pod address", req: get("http://10.1.2.3:9090/readyz"), status: 200},
		{name: "no token, scrape by pod address", req: get("http://10.1.2.3:9090/metrics"), status: 200},
		{name: "token, none sent", token: token, req: get("http://127.0.0.1:9090/admin/providers"), status: 401},
		{name: "token, wrong", token: token, req: get("http://127.0.0.1:9090/admin/providers", "Authorization", "Bearer nope"), status: 401},
		{name: "token, Bearer", token: token, req: get("http://10.1.2.3:9090/admin/providers", "Authorization", "Bearer "+token), status: 200},
		{name: "token, cookie", token: token, req: get("http://10.1.2.3:9090/admin/keys", "Cookie", CookieName+"="+token), status: 200},
		{name: "token, not in a query", token: token, req: get("http://10.1.2.3:9090/admin/keys?token=" + token), status: 401},
		{name: "token, scrape open", token: token, req: get("http://10.1.2.3:9090/metrics"), status: 200},
		{name: "token, probe open", token: token, req: get("http://10.1.2.3:9090/healthz"), status: 200},
		{name: "enable as JSON", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json", "{}"), status: 200},
		{name: "enable as JSON with a charset", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json; charset=utf-8", "{}"), status: 200},
		{name: "enable as a form", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/x-www-form-urlencoded", "a=b"), status: 415},
		{name: "enable without a type", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "", ""), status: 415},
		{name: "enable from another site", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json", "{}",
			"Origin", "https://evil.example"), status: 403},
		{name: "enable from the page", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json", "{}",
			"Origin", "http://127.0.0.1:9090", "Sec-Fetch-Site", "same-origin"), status: 200},
		{name: "enable, a browser says cross-site", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json", "{}",
			"Sec-Fetch-Site", "cross-site"), status: 403},
		{name: "enable, an opaque origin", req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json", "{}",
			"Origin", "null"), status: 403},
		{name: "token, enable needs it", token: token, req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json", "{}"), status: 401},
		{name: "token, enable with it", token: token, req: post("http://127.0.0.1:9090/admin/providers/p/enable", "application/json", "{}",
			"Authorization", "Bearer "+token), status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := adminHandler(t, tc.token)
			r := httptest.NewRequest(tc.req.method, tc.req.url, strings.NewReader(tc.req.body))
			for k, v := range tc.req.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Errorf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if w.Header().Get("Content-Security-Policy") != "default-src 'self'" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v lack the browser policy", w.Header())
			}
			if w.Code == 401 && w.Header().Get("Www-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}

// TestLogin: the page's login form sets an HttpOnly, SameSite=Strict
// cookie from a POSTed token that then opens the admin pages; a wrong token
// or another site's form sets nothing.
func TestLogin(t *testing.T) {
	const token = "s3cret-token"
	h := adminHandler(t, token)
	login := func(tok string, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "http://10.1.2.3:9090/admin/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := login(token, "http://10.1.2.3:9090")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
		t.Fatalf("login: %d %v", w.Code, w.Header())
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != CookieName || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v, want %s HttpOnly SameSite=Strict", cookies, CookieName)
	}
	r := httptest.NewRequest("GET", "http://10.1.2.3:9090/admin/providers", nil)
	r.AddCookie(cookies[0])
	w2 := httptest.NewRecorder()
	h.ServeHTTP(w2, r)
	if w2.Code != 200 {
		t.Errorf("with the cookie: %d", w2.Code)
	}
	if w := login("wrong", ""); w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Errorf("wrong token: %d %v", w.Code, w.Result().Cookies())
	}
	if w := login(token, "https://evil.example"); w.Code != 403 || len(w.Result().Cookies()) != 0 {
		t.Errorf("another site's form: %d %v", w.Code, w.Result().Cookies())
	}
}

// TestLoopbackHost: which Host headers name this machine's loopback.
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:9090": true, "127.8.9.10:1": true, "[::1]:9090": true, "::1": true,
		"localhost": true, "LOCALHOST:9090": true, "localhost.": true, "app.localhost:9090": true,
		"": false, "10.0.0.1:9090": false, "evil.example": false, "localhost.evil.example": false, "0.0.0.0:9090": false,
		"[::]:9090": false, "notlocalhost": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
