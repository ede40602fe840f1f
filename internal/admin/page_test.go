package admin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestPage: the status page is three embedded files on the admin
// listener, each with its type and the guard's CSP and nosniff; the
// document loads its script and style from files (the CSP forbids inline
// ones) and the script never inserts HTML.
func TestPage(t *testing.T) {
	h := adminHandler(t, "")
	for _, c := range []struct {
		path, ctype string
		has         []string
	}{
		{"/", "text/html; charset=utf-8", []string{`<script src="/app.js" defer></script>`, `href="/style.css"`, `id="providers-body"`, `id="recent-body"`}},
		{"/app.js", "text/javascript; charset=utf-8", []string{`new EventSource("/admin/events")`, "textContent"}},
		{"/style.css", "text/css; charset=utf-8", []string{".state-open"}},
	} {
		t.Run(c.path, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://127.0.0.1:9090"+c.path, nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != 200 {
				t.Fatalf("status %d", w.Code)
			}
			hd := w.Header()
			if hd.Get("Content-Type") != c.ctype || hd.Get("Content-Security-Policy") != "default-src 'self'" || hd.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", hd)
			}
			body := w.Body.String()
			for _, s := range c.has {
				if !strings.Contains(body, s) {
					t.Errorf("lacks %q", s)
				}
			}
			if c.path == "/" && regexp.MustCompile(`<script>|<style|style="|\son[a-z]+="`).MatchString(body) {
				t.Error("the document has inline script or style, which the CSP refuses")
			}
		})
	}
	if w := get(h, "http://127.0.0.1:9090/nothing"); w.Code != http.StatusNotFound {
		t.Errorf("an unknown path: %d, want 404", w.Code)
	}
}

// TestScriptInsertsText: nothing in the page's script parses a string as
// HTML: a model name or a provider's error shown on the page stays text.
func TestScriptInsertsText(t *testing.T) {
	b, err := pageFS.ReadFile("page/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute(\"on", "DOMParser", "createContextualFragment", "srcdoc"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}

// TestLoginPage: with a token and no credential, the page's address
// answers 401 with a form that POSTs the token (never a URL carrying it);
// the login sets an HttpOnly SameSite=Strict cookie that then opens it.
func TestLoginPage(t *testing.T) {
	const token = "s3cret-token"
	h := adminHandler(t, token)
	w := get(h, "http://10.1.2.3:9090/")
	if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", w.Code, w.Header().Get("Content-Type"))
	}
	body := w.Body.String()
	for _, s := range []string{`method="post"`, `action="/admin/login"`, `name="token"`, `type="password"`} {
		if !strings.Contains(body, s) {
			t.Errorf("login form lacks %s", s)
		}
	}
	if strings.Contains(body, token) {
		t.Error("the login page holds the token")
	}
	if w := get(h, "http://10.1.2.3:9090/app.js"); w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "EventSource") {
		t.Errorf("the script without a credential: %d", w.Code)
	}
	r := httptest.NewRequest("POST", "http://10.1.2.3:9090/admin/login", strings.NewReader("token="+token))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	lw := httptest.NewRecorder()
	h.ServeHTTP(lw, r)
	cookies := lw.Result().Cookies()
	if lw.Code != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d, cookies %v", lw.Code, cookies)
	}
	r = httptest.NewRequest("GET", "http://10.1.2.3:9090/", nil)
	r.AddCookie(cookies[0])
	pw := httptest.NewRecorder()
	h.ServeHTTP(pw, r)
	if b, _ := io.ReadAll(pw.Body); pw.Code != 200 || !strings.Contains(string(b), "/app.js") {
		t.Errorf("the page with the cookie: %d", pw.Code)
	}
}

func get(h http.Handler, url string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", url, nil))
	return w
}

// TestState: GET /admin/state is what the page's state event carries:
// the providers' rows, the models with their targets' availability, the
// keys and the reloads; GET /admin/config and /admin/recent answer
// without a Config or a ring.
func TestState(t *testing.T) {
	h := adminHandler(t, "")
	w := get(h, "http://127.0.0.1:9090/admin/state")
	var st State
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != 200 {
		t.Fatalf("status %d: %v", w.Code, err)
	}
	if len(st.Providers) != 1 || st.Providers[0].Name != "p" || st.Providers[0].LastErrorAgoSeconds != -1 {
		t.Errorf("providers %+v", st.Providers)
	}
	want := ModelStatus{Name: "m", Targets: []TargetStatus{{Provider: "p", Model: "x", Available: true}}}
	if len(st.Models) != 1 || st.Models[0].Name != want.Name || len(st.Models[0].Targets) != 1 || st.Models[0].Targets[0] != want.Targets[0] {
		t.Errorf("models %+v, want %+v", st.Models, want)
	}
	if st.Keys == nil || st.Reloads == nil {
		t.Errorf("keys %v reloads %v: want empty lists", st.Keys, st.Reloads)
	}
	for _, path := range []string{"/admin/config", "/admin/recent", "/admin/models"} {
		if w := get(h, "http://127.0.0.1:9090"+path); w.Code != 200 || !json.Valid(w.Body.Bytes()) {
			t.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
	}
}
