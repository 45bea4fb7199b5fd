// pulumi-resource-kubernetes from the provider module's library: the module's own main package embeds a
// schema its release build generates (schema-embed.json, absent from the module zip), so this wrapper
// serves the provider itself, embedding the files engine/build.sh writes beside it from the module's
// schema.json (with the version set) and terraform-mapping.json.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
