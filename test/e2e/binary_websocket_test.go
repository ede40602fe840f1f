package e2e

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tidwall/gjson"
)

// testBinaryWebSocket: the Responses API over WebSocket on the binary
// (docs/ARCHITECTURE.md, "Responses API over WebSocket"). An upgrade
// with an Origin header gets 403 whatever the auth setting, a good key
// included, and nothing reaches the provider; one without serves turn
// after turn on one connection; at SIGTERM an idle connection is closed
// going away and the router exits 0.
func testBinaryWebSocket(t *testing.T, bin string) {
	for _, auth := range []bool{false, true} {
		name := "auth off"
		if auth {
			name = "auth on"
		}
		t.Run(name, func(t *testing.T) {
			fake := newBinFake(t, "up", openaiAPI)
			p := startRouter(t, bin, binConfig{providers: []binProvider{{fake: fake, typ: "openai_compatible"}}, auth: auth})
			url := "ws://" + p.apiAddr + "/v1/responses"
			dial := func(h http.Header) (*websocket.Conn, *http.Response, error) {
				h.Set("Authorization", "Bearer "+clientKey)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				return websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
			}
			for _, origin := range []string{"https://evil.example", "null", "http://" + p.apiAddr} {
				c, resp, err := dial(http.Header{"Origin": {origin}})
				if c != nil {
					c.CloseNow()
				}
				if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
					t.Fatalf("Origin %s: %v %v, want 403; router output:\n%s", origin, resp, err, p.stderr)
				}
			}
			if n := fake.count(false, 0); n != 0 {
				t.Fatalf("the provider received %d requests from refused upgrades, want none", n)
			}

			c, _, err := dial(http.Header{})
			if err != nil {
				t.Fatalf("upgrade without Origin: %v; router output:\n%s", err, p.stderr)
			}
			defer c.CloseNow()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			prev := ""
			for turn := range 2 {
				msg := `{"type":"response.create","model":"m","store":false,"input":[{"type":"message","role":"user","content":"hi"}]`
				if prev != "" {
					msg += `,"previous_response_id":"` + prev + `"`
				}
				if err := c.Write(ctx, websocket.MessageText, []byte(msg+"}")); err != nil {
					t.Fatal(err)
				}
				for {
					_, b, err := c.Read(ctx)
					if err != nil {
						t.Fatalf("turn %d: %v; router output:\n%s", turn, err, p.stderr)
					}
					typ := gjson.GetBytes(b, "type").Str
					if typ == "error" || typ == "response.failed" {
						t.Fatalf("turn %d: %s", turn, b)
					}
					if typ == "response.completed" {
						prev = gjson.GetBytes(b, "response.id").Str
						break
					}
				}
			}
			if n := fake.count(false, 0); n != 2 {
				t.Errorf("the provider received %d requests, want the 2 turns'", n)
			}

			p.signal(syscall.SIGTERM)
			if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Errorf("an idle connection at SIGTERM: %v, want a close going away", err)
			}
			if code := p.waitExit(p.shutdown + exitSlack); code != 0 {
				t.Errorf("router exited %d, want 0; output:\n%s", code, p.stderr)
			}
			p.checkLog()
		})
	}
}
