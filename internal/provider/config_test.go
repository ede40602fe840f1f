package provider

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConfigResolveKey(t *testing.T) {
	t.Setenv("TEST_KEY", " sk-123 \n")
	t.Setenv("TEST_EMPTY_KEY", "")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	emptyFile := filepath.Join(dir, "empty")
	if err := errors.Join(os.WriteFile(keyFile, []byte("sk-file\n"), 0o600), os.WriteFile(emptyFile, nil, 0o600)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      string
		file     string
		required bool
		want     string
		wantErr  string // "" means no error
	}{
		{"env", "TEST_KEY", "", true, "sk-123", ""},
		{"file", "", keyFile, true, "sk-file", ""},
		{"unset env", "TEST_UNSET_KEY", "", true, "", "api_key_env: environment variable TEST_UNSET_KEY is unset or empty"},
		{"empty env, optional", "TEST_EMPTY_KEY", "", false, "", ""},
		{"none, required", "", "", true, "", "api_key_env: type x needs an API key: set api_key_env or api_key_file"},
		{"none, optional", "", "", false, "", ""},
		{"missing file", "", filepath.Join(dir, "missing"), false, "", "api_key_file: open " + filepath.Join(dir, "missing")},
		{"empty file", "", emptyFile, true, "", "api_key_file: " + emptyFile + " is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Config{Type: "x", APIKeyEnv: tt.env, APIKeyFile: tt.file}.ResolveKey(tt.required)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)) {
				t.Fatalf("got error %v, want %q", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got key %q, want %q", got, tt.want)
			}
		})
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	c := Config{Name: "a b", APIKeyEnv: "E", APIKeyFile: "F", MaxConcurrency: -1, RPM: -2, TPM: -3, FirstTokenTimeout: -1, Timeout: -2}
	got := strings.Split(c.Validate().Error(), "\n")
	want := []string{
		`name: may hold only letters, digits, '_', '.', '-', got "a b"`,
		`api_key_env: set api_key_env or api_key_file, not both (got "E" and "F")`,
		"max_concurrency: must not be negative, got -1",
		"rpm: must not be negative, got -2",
		"tpm: must not be negative, got -3",
		"first_token_timeout: must not be negative, got -1ns",
		"timeout: must not be negative, got -2ns",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if err := (Config{Name: "ok-1.x_y"}).Validate(); err != nil {
		t.Errorf("got %v for a valid entry, want nil", err)
	}
	if err := (Config{}).Validate(); err == nil || err.Error() != "name: must not be empty" {
		t.Errorf("got %v, want name: must not be empty", err)
	}
}

func TestUnder(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // "" means nil
	}{
		{"nil", nil, ""},
		{"one", errors.New("base_url: bad"), "p[0].base_url: bad"},
		{"joined", errors.Join(errors.New("a: 1"), errors.New("b: 2")), "p[0].a: 1\np[0].b: 2"},
		{"nested", errors.Join(errors.New("a: 1"), errors.Join(errors.New("b: 2"), errors.New("c: 3"))), "p[0].a: 1\np[0].b: 2\np[0].c: 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Under("p[0]", tt.err)
			if tt.want == "" && got != nil || tt.want != "" && (got == nil || got.Error() != tt.want) {
				t.Errorf("got %v, want %q", got, tt.want)
			}
		})
	}
	if err := Under("k", &fs.PathError{Op: "open", Path: "f", Err: fs.ErrNotExist}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want it to stay fs.ErrNotExist", err)
	}
}
