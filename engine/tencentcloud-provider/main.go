// Package main is pulumi-resource-tencentcloud as the engine tests run it: the ONE STAND-IN for a real
// provider in make engine, because the cloud is the one part that cannot be real here. The real provider,
// github.com/tencentcloudstack/pulumi-tencentcloud/provider at the Python SDK's release (0.2.3), is refused
// by the Go module proxy:
//
//	go: github.com/tencentcloudstack/pulumi-tencentcloud/provider@v0.2.3: reading
//	https://proxy.golang.org/github.com/tencentcloudstack/pulumi-tencentcloud/provider/@v/v0.2.3.info:
//	403 Forbidden
//		server response: This module version is not available.
//
// It talks to no cloud. CheckConfig and Check accept the inputs as they are; Diff reports the top-level
// keys whose values changed (never a replacement); Create invents an id from the resource's URN and echoes
// the inputs as outputs; Read and Update echo what they are given; Delete forgets. The one invoke the program
// makes, tencentcloud:Kubernetes/getClusters, answers with the cluster id asked for and a placeholder
// kubeconfig that names no reachable server and holds no credentials (as the offline render's mocks do);
// any other invoke fails. GetSchema answers a schema of its own naming only what a consumer program of the
// component package declares itself (tests/engine_consumers/: the provider's region, a
// tencentcloud:Kubernetes/cluster:Cluster), so a typed language (Pulumi YAML) can use it; it is not the real
// provider's schema. It validates nothing the real provider validates: a preview through it proves
// what the program registers, never what TKE would accept.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// version is set by make engine: the tencentcloud-iac-pulumi SDK's version, the plugin it asks for.
var version = "0.0.0"

const getClusters = "tencentcloud:Kubernetes/getClusters:getClusters"

const placeholderKubeconfig = `# pulumi-resource-tencentcloud stand-in: no server is contacted and there are no credentials here.
apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: https://%[1]s.offline.invalid
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: offline
current-context: %[1]s
users:
- name: offline
  user: {}
`

type standIn struct {
	pulumirpc.UnimplementedResourceProviderServer
}

func main() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-tencentcloud (stand-in): %v\n", err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	pulumirpc.RegisterResourceProviderServer(server, &standIn{})
	fmt.Printf("%d\n", listener.Addr().(*net.TCPAddr).Port) // the CLI reads the port from stdout
	if err := server.Serve(listener); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-tencentcloud (stand-in): %v\n", err)
		os.Exit(1)
	}
}

func (standIn) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// schemaJSON: the stand-in's own package schema (see the package doc). The Cluster's id is its resource id,
// unknown at a preview as any created resource's.
const schemaJSON = `{
  "name": "tencentcloud",
  "version": "%s",
  "config": {"variables": {"region": {"type": "string"}}},
  "provider": {"inputProperties": {"region": {"type": "string"}}},
  "resources": {
    "tencentcloud:Kubernetes/cluster:Cluster": {
      "description": "pulumi-resource-tencentcloud stand-in: a TKE cluster that is never created.",
      "inputProperties": {
        "clusterName": {"type": "string"},
        "vpcId": {"type": "string"},
        "clusterVersion": {"type": "string"}
      },
      "properties": {
        "clusterName": {"type": "string"},
        "vpcId": {"type": "string"},
        "clusterVersion": {"type": "string"}
      }
    }
  }
}`

func (standIn) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: fmt.Sprintf(schemaJSON, version)}, nil
}

func (standIn) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (standIn) DiffConfig(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return diff(req.GetOldInputs(), req.GetNews()), nil
}

func (standIn) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true, AcceptResources: true}, nil
}

func (standIn) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (standIn) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds := req.GetOldInputs()
	if olds == nil {
		olds = req.GetOlds()
	}
	return diff(olds, req.GetNews()), nil
}

// diff names the top-level keys whose values differ; the stand-in never asks for a replacement.
func diff(olds, news *structpb.Struct) *pulumirpc.DiffResponse {
	keys := map[string]bool{}
	for k := range olds.GetFields() {
		keys[k] = true
	}
	for k := range news.GetFields() {
		keys[k] = true
	}
	changed := []string{}
	for k := range keys {
		if !proto.Equal(olds.GetFields()[k], news.GetFields()[k]) {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	if len(changed) == 0 {
		return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}
	}
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_SOME, Diffs: changed}
}

// inventedID is stable per URN, so a second `up` of the same stack sees the same ids.
func inventedID(urn string) string {
	sum := sha256.Sum256([]byte(urn))
	return "standin-" + hex.EncodeToString(sum[:6])
}

func (standIn) Create(_ context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	id := inventedID(req.GetUrn())
	if req.GetPreview() {
		id = "" // as a real provider: the id is unknown until the resource exists
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: req.GetProperties()}, nil
}

func (standIn) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

func (standIn) Update(_ context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	return &pulumirpc.UpdateResponse{Properties: req.GetNews()}, nil
}

func (standIn) Delete(context.Context, *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (standIn) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (standIn) Invoke(_ context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	if req.GetTok() != getClusters {
		return nil, status.Errorf(codes.Unimplemented, "pulumi-resource-tencentcloud stand-in: no invoke %s", req.GetTok())
	}
	clusterID := "cls-offline"
	if id := req.GetArgs().GetFields()["clusterId"].GetStringValue(); strings.TrimSpace(id) != "" {
		clusterID = id
	}
	result, err := structpb.NewStruct(map[string]any{
		"clusterId": clusterID,
		"lists": []any{map[string]any{
			"clusterId":  clusterID,
			"kubeConfig": fmt.Sprintf(placeholderKubeconfig, clusterID),
		}},
	})
	if err != nil {
		return nil, err
	}
	return &pulumirpc.InvokeResponse{Return: result}, nil
}
