//go:build tools

// Package tools pins the CLI's main package so `go mod tidy` keeps what it needs.
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
