package admin

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// CookieName is the cookie the status page's login form sets from the
// admin token (HttpOnly, SameSite=Strict): a browser sends it on the
// page's own requests, never on another site's.
const CookieName = "llmrouter_admin"

// open are the routes a guard never holds: probes and scrapes reach them
// by the pod's address, without a token.
var open = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// guard wraps the admin handler (docs/ARCHITECTURE.md, "Admin listener"):
//   - every response says what a browser may do with it
//     (Content-Security-Policy: default-src 'self', nosniff);
//   - with no token, a request for anything but the open routes whose Host
//     is not a loopback name or address is 421: a page the operator has
//     open elsewhere cannot reach the admin listener through a rebound DNS
//     name;
//   - with a token, everything but the open routes requires it, as
//     `Authorization: Bearer <token>` or the cookie the login form sets
//     (the page's address without it serves that form, 401);
//   - a request that changes state (POST) must be application/json and
//     may not come from another site (Origin, Sec-Fetch-Site).
func guard(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		if open[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		switch {
		case token == "" && !loopbackHost(r.Host):
			deny(w, http.StatusMisdirectedRequest, "the admin listener answers its pages and /admin/* only to a loopback host name "+
				"unless admin_token_env sets a token")
			return
		case token != "" && r.URL.Path == "/admin/login" && r.Method == http.MethodPost:
			login(w, r, token)
			return
		case token != "" && !authorized(r, token) && r.URL.Path == "/" && r.Method == http.MethodGet:
			loginPage(w)
			return
		case token != "" && !authorized(r, token):
			h.Set("Www-Authenticate", `Bearer realm="llmrouter-admin"`)
			deny(w, http.StatusUnauthorized, "the admin listener requires its token: Authorization: Bearer <token>")
			return
		}
		if r.Method == http.MethodPost {
			if crossSite(r) {
				deny(w, http.StatusForbidden, "a request from another site may not change the router's state")
				return
			}
			if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
				deny(w, http.StatusUnsupportedMediaType, "a request that changes the router's state must be application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deny answers a refusal as the admin listener's JSON error.
func deny(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(openaiwire.AppendString([]byte(`{"error":`), msg), "}\n"...))
}

// authorized reports whether r carries token, as a Bearer credential or
// the login cookie, compared in constant time.
func authorized(r *http.Request, token string) bool {
	got := ""
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		got = strings.TrimSpace(a[7:])
	} else if c, err := r.Cookie(CookieName); err == nil {
		got = c.Value
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// login sets the cookie from a form POST of the token (never from a URL:
// a token in a query string ends up in histories and logs) and sends the
// browser to the page.
func login(w http.ResponseWriter, r *http.Request, token string) {
	if crossSite(r) {
		deny(w, http.StatusForbidden, "a request from another site may not log in")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(token)) != 1 {
		deny(w, http.StatusUnauthorized, "wrong token")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// crossSite reports whether a browser says r comes from another site: an
// Origin whose host is not r's, or Sec-Fetch-Site cross-site. A request
// with neither (curl, the router's own CLI) is not a browser's.
func crossSite(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err != nil || o == "null" || !strings.EqualFold(u.Host, r.Host)
}

// loopbackHost reports whether host (a Host header, with or without a
// port) names this machine's loopback: localhost, a name under
// .localhost, or a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
