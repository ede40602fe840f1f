package configs

import _ "embed"

// Default is the embedded default configuration.
//
//go:embed default.yaml
var Default []byte
