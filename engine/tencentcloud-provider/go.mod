// gpushare's stand-in pulumi-resource-tencentcloud (main.go says why): the ResourceProvider service from
// sdk/v3 at the CLI's release (engine/versions.env).
module gpushare.local/engine/tencentcloud-provider

go 1.26.6

require (
	github.com/pulumi/pulumi/sdk/v3 v3.274.0
	google.golang.org/grpc v1.83.2
	google.golang.org/protobuf v1.36.11
)

require (
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260803160001-6ac0973c030d // indirect
)
