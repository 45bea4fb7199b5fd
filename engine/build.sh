#!/usr/bin/env bash
# make engine: the real tools in .engine/bin/, built from the Go module proxy at engine/versions.env's pins
# (one wrapper module per tool under engine/), or linked from PATH when the same version is installed.
# Idempotent: a tool whose stamp names the pinned version is left alone. GOMODCACHE/GOCACHE are Go's
# defaults, so a second machine run of CI reuses them. Each build's wall and CPU time go to
# .engine/build-times.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091 # plain assignments, read where the script runs
source engine/versions.env
BIN="$PWD/.engine/bin"
mkdir -p "$BIN"
TIMES="$PWD/.engine/build-times.txt"
# ENGINE_TOOLS="etcd kube-apiserver" builds only those (default: all, in the order below).
TOOLS=" ${ENGINE_TOOLS:-pulumi pulumi-language-python pulumi-language-yaml pulumi-resource-tencentcloud pulumi-resource-kubernetes etcd kube-apiserver} "
wanted() { [[ "$TOOLS" == *" $1 "* ]]; }

up_to_date() { # tool version
    [[ -x "$BIN/$1" && -f "$BIN/.$1.version" && "$(cat "$BIN/.$1.version")" == "$2" ]]
}

build() { # tool version module-dir package [ldflags]
    local tool=$1 version=$2 dir=$3 package=$4 ldflags=${5:-}
    wanted "$tool" || return 0
    if up_to_date "$tool" "$version"; then
        echo "engine: $tool $version already built"
        return
    fi
    echo "engine: building $tool $version (engine/$dir)"
    /usr/bin/time -f "$tool $version: wall %e s, cpu %U+%S s" -a -o "$TIMES" \
        nice -n 19 go build -C "engine/$dir" -trimpath -ldflags "$ldflags" -o "$BIN/$tool" "$package"
    echo "$version" >"$BIN/.$tool.version"
}

# The Pulumi CLI: one already on PATH at the pinned version is used as it is.
if wanted pulumi && ! up_to_date pulumi "$PULUMI_VERSION"; then
    if installed=$(command -v pulumi) && [[ "$("$installed" version 2>/dev/null)" == "$PULUMI_VERSION" ]]; then
        ln -sf "$installed" "$BIN/pulumi"
        echo "$PULUMI_VERSION" >"$BIN/.pulumi.version"
    fi
fi
build pulumi "$PULUMI_VERSION" pulumi github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
    "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION"
# STAND-IN for pulumi-language-python (the proxy refuses sdk/python/cmd/pulumi-language-python/v3:
# engine/README.md): the project's own host, with the Python SDK's exec script from sdk/v3's module zip
# beside it, where the host looks for it. The stamp names both the release and the host's source.
host_stamp="$PULUMI_VERSION+$(cat engine/python-language-host/main.go engine/python-language-host/go.mod | sha256sum | cut -c1-12)"
build pulumi-language-python "$host_stamp" python-language-host . "-X main.version=$PULUMI_VERSION"
if wanted pulumi-language-python; then
    (cd engine/python-language-host && go mod download github.com/pulumi/pulumi/sdk/v3)
    sdk_dir=$(go list -C engine/python-language-host -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)
    install -m 0755 "$sdk_dir/python/cmd/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
fi
# pulumi-language-yaml, real, for the Pulumi YAML consumer of the component package (tests/engine_consumers/):
# pulumi-yaml's main at its own pkg/v3 (engine/yaml-language-host/go.mod says why not the CLI's).
build pulumi-language-yaml "$PULUMI_YAML_VERSION" yaml-language-host github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml \
    "-X github.com/pulumi/pulumi-yaml/pkg/version.Version=$PULUMI_YAML_VERSION"
# STAND-IN for pulumi-resource-tencentcloud, the one cloud provider (the proxy refuses
# github.com/tencentcloudstack/pulumi-tencentcloud/provider@v0.2.3): echoes inputs, invents ids.
standin_stamp="$TENCENTCLOUD_PLUGIN_VERSION+$(cat engine/tencentcloud-provider/main.go engine/tencentcloud-provider/go.mod | sha256sum | cut -c1-12)"
build pulumi-resource-tencentcloud "$standin_stamp" tencentcloud-provider . "-X main.version=$TENCENTCLOUD_PLUGIN_VERSION"
# The provider's own main embeds schema-embed.json, which its release build generates (the module zip lacks
# it): engine/kubernetes-provider/main.go serves the provider, embedding what this writes as the
# module's generate.go would (schema.json with the version set, both files compacted).
if wanted pulumi-resource-kubernetes && ! up_to_date pulumi-resource-kubernetes "$KUBERNETES_PROVIDER_MODULE_VERSION"; then
    # `go list -m -f {{.Dir}}` prints nothing for a module not yet in GOMODCACHE (a new machine's cold
    # cache): download it first, which is a no-op when it is there.
    (cd engine/kubernetes-provider && go mod download github.com/pulumi/pulumi-kubernetes/provider/v4)
    provider_dir=$(go list -C engine/kubernetes-provider -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)
    if [[ -z "$provider_dir" ]]; then
        echo "engine: github.com/pulumi/pulumi-kubernetes/provider/v4 is not in the module cache after go mod download" >&2
        exit 1
    fi
    python3 - "$provider_dir/cmd/pulumi-resource-kubernetes" engine/kubernetes-provider \
        "$KUBERNETES_PROVIDER_PLUGIN_VERSION" <<'PYTHON'
import json, sys
from pathlib import Path
source, target, version = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
schema = json.loads((source / "schema.json").read_text())
schema["version"] = version
(target / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
mapping = json.loads((source / "terraform-mapping.json").read_text())
(target / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))
PYTHON
fi
build pulumi-resource-kubernetes "$KUBERNETES_PROVIDER_MODULE_VERSION" kubernetes-provider . \
    "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$KUBERNETES_PROVIDER_PLUGIN_VERSION"
build etcd "$ETCD_VERSION" etcd go.etcd.io/etcd/server/v3
minor=${KUBERNETES_VERSION#v1.}
minor=${minor%%.*}
build kube-apiserver "$KUBERNETES_VERSION" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
    "-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
