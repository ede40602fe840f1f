package admin

import (
	"embed"
	"net/http"
)

// The status page (docs/ARCHITECTURE.md, "Status page"): a document, a
// script and a style sheet, embedded in the binary and served from the
// admin listener (no CDN, no build step; the CSP default-src 'self' the
// guard sets forbids inline script and style, hence three files). The
// script reads /admin/state, /admin/config and /admin/events and inserts
// every string as text.
//
//go:embed page/index.html page/app.js page/style.css page/login.html
var pageFS embed.FS

// pageFile is one embedded file and its type.
type pageFile struct{ name, ctype string }

// page registers the page's routes on mux.
func page(mux *http.ServeMux) {
	for route, f := range map[string]pageFile{
		"GET /{$}":       {"page/index.html", "text/html; charset=utf-8"},
		"GET /app.js":    {"page/app.js", "text/javascript; charset=utf-8"},
		"GET /style.css": {"page/style.css", "text/css; charset=utf-8"},
	} {
		b, err := pageFS.ReadFile(f.name)
		if err != nil {
			panic("admin: the status page lacks " + f.name) // embedded: cannot happen
		}
		ctype := f.ctype
		mux.HandleFunc(route, func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set("Content-Type", ctype)
			h.Set("Cache-Control", "no-cache")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
			_, _ = w.Write(b)
		})
	}
}

// loginPage answers a browser that asks for the page without the token:
// 401 and a form that POSTs the token to /admin/login.
func loginPage(w http.ResponseWriter) {
	b, _ := pageFS.ReadFile("page/login.html")
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Www-Authenticate", `Bearer realm="llmrouter-admin"`)
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(b)
}
