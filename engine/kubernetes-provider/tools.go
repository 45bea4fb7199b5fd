//go:build tools

// Package tools pins the provider's main package so `go mod tidy` keeps what it needs.
package tools

import _ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
