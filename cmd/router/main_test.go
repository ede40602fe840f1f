package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/config"
)

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	typo := filepath.Join(dir, "typo.yaml")
	os.WriteFile(good, []byte("providers: [{name: p, type: simulated}]\nmodels: [{name: m, targets: [{provider: p, model: x, tier: 0}, {provider: p, model: y, tier: 1, max_output_tokens: 16384}]}]\n"), 0o600)
	os.WriteFile(typo, []byte("providers: [{name: p, type: simulated, max_concurency: 3}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"), 0o600)
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"validate", "--config", good}, 0, "m      0     p         simulated  x               -        -\nm      1     p         simulated  y               -        16384", ""},
		{[]string{"validate"}, 0, "config embedded default (simulated providers) is valid", ""},
		{[]string{"validate", "--config", typo}, 1, "", "unknown key providers[0].max_concurency"},
		{[]string{"validate", "--config", filepath.Join(dir, "missing.yaml")}, 1, "", "no such file"},
		{[]string{"version"}, 0, "llmrouter dev", ""},
		{[]string{"frobnicate"}, 2, "", "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errb.String())
			}
			if !strings.Contains(out.String(), tt.out) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.out)
			}
			if !strings.Contains(errb.String(), tt.err) {
				t.Errorf("stderr %q lacks %q", errb.String(), tt.err)
			}
		})
	}
}

func TestExampleConfigsValidate(t *testing.T) {
	files, _ := filepath.Glob("../../configs/examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example configs")
	}
	for _, f := range files {
		if _, err := config.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
