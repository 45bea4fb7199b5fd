// Package main is gpushare's STAND-IN for pulumi-language-python, the Pulumi CLI's Python language host.
//
// Why a stand-in: the real host is the nested module
// github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3, which Pulumi does not tag and which the
// Go module proxy refuses at every version this project asked for:
//
//	go: module github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3: reading
//	https://proxy.golang.org/github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3/@v/list:
//	403 Forbidden
//		server response: This module version is not available.
//
// Without a Python language host the CLI runs neither the program nor the policy pack, so this small host,
// written for this project against the LanguageRuntime service of sdk/v3 (pulumirpc), lets the real CLI,
// engine and providers of make engine run them. What it does:
//   - Run: starts the project's virtualenv python (runtime.options.virtualenv, relative to the project root)
//     on the Python SDK's exec script, pulumi-language-python-exec (make engine copies it from sdk/v3's
//     module zip beside this binary), with the monitor and engine addresses, project, stack, organization,
//     parallelism and dry-run flag as its arguments and the config in PULUMI_CONFIG and
//     PULUMI_CONFIG_SECRET_KEYS; exit code 32 (the script already reported the error) is a bail.
//   - RunPlugin: a policy pack (kind analyzer) as `python -u -m pulumi.policy <engine> <pack dir>`, any
//     other plugin (a component provider) as `python -u <plugin dir> <args>`, in the plugin's virtualenv,
//     streaming its output back.
//   - GetRequiredPackages/GetRequiredPlugins: the resource plugins the virtualenv's packages declare in
//     their pulumi-plugin.json (a package whose file has no version gets its distribution's version).
//   - GetProgramDependencies: `pip list` of the virtualenv; About: its python and version.
//
// What it does not do: create or install a virtualenv (InstallDependencies only checks that the
// virtualenv's python exists: make venv/.installed and the pack's own install do that), the uv and poetry
// toolchains, a python from PATH when no virtualenv is configured, type checkers, debuggers, the
// typechecker option, `pulumi new` templating, package code generation (GenerateProject,
// GeneratePackage, GenerateProgram, Pack, Link) and parameterized packages. Those answer Unimplemented.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is set by make engine (-ldflags -X main.version=...): the CLI release it is built against.
var version = "0.0.0"

// execScriptName is the Python SDK's entry script; make engine installs it beside this binary.
const execScriptName = "pulumi-language-python-exec"

// bailExitCode is the exec script's exit code after it has itself shown the user an error.
const bailExitCode = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
	execScript    string
}

func main() {
	// The CLI passes its own flags first and the engine's address as the last positional argument.
	args := os.Args[1:]
	positional := []string{}
	for _, arg := range args {
		if !strings.HasPrefix(arg, "-") {
			positional = append(positional, arg)
		}
	}
	engine := ""
	if len(positional) > 0 {
		engine = positional[len(positional)-1]
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python (stand-in): %v\n", err)
		os.Exit(1)
	}
	h := &host{engineAddress: engine, execScript: filepath.Join(filepath.Dir(self), execScriptName)}

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python (stand-in): %v\n", err)
		os.Exit(1)
	}
	server := grpc.NewServer(grpc.MaxRecvMsgSize(400*1024*1024), grpc.MaxSendMsgSize(400*1024*1024))
	pulumirpc.RegisterLanguageRuntimeServer(server, h)
	// The CLI reads the port from the first line of stdout.
	fmt.Printf("%d\n", listener.Addr().(*net.TCPAddr).Port)
	if err := server.Serve(listener); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python (stand-in): %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(
	_ context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: strings.TrimPrefix(version, "v")}, nil
}

// virtualenvPython is the interpreter of runtime.options.virtualenv, relative to base (the project root
// for a program, the plugin's folder for a plugin). Without that option there is nothing this stand-in
// runs: the real host's PATH lookup and other toolchains are not implemented.
func virtualenvPython(info *pulumirpc.ProgramInfo, base string) (string, error) {
	options := info.GetOptions().AsMap()
	if toolchain, ok := options["toolchain"].(string); ok && toolchain != "" && toolchain != "pip" {
		return "", fmt.Errorf("stand-in Python host: toolchain %q is not implemented (only pip)", toolchain)
	}
	venv, ok := options["virtualenv"].(string)
	if !ok || venv == "" {
		return "", errors.New("stand-in Python host: runtime.options.virtualenv is required")
	}
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(base, venv)
	}
	python := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return "", fmt.Errorf("stand-in Python host: the virtualenv %s has no python (install it first): %w", venv, err)
	}
	return python, nil
}

func programRoot(info *pulumirpc.ProgramInfo) string {
	if info.GetRootDirectory() != "" {
		return info.GetRootDirectory()
	}
	return info.GetProgramDirectory()
}

// pluginManifest is the part of a package's pulumi-plugin.json this host reads.
type pluginManifest struct {
	Resource bool   `json:"resource"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Server   string `json:"server"`
}

// requiredPackages reads every site-packages/*/pulumi-plugin.json of the virtualenv.
func requiredPackages(python string) ([]*pulumirpc.PackageDependency, error) {
	venv := filepath.Dir(filepath.Dir(python))
	manifests, err := filepath.Glob(filepath.Join(venv, "lib", "python*", "site-packages", "*", "pulumi-plugin.json"))
	if err != nil {
		return nil, err
	}
	packages := []*pulumirpc.PackageDependency{}
	for _, path := range manifests {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var manifest pluginManifest
		if err := json.Unmarshal(raw, &manifest); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !manifest.Resource {
			continue
		}
		name := manifest.Name
		if name == "" {
			name = strings.TrimPrefix(filepath.Base(filepath.Dir(path)), "pulumi_")
		}
		pluginVersion := manifest.Version
		if pluginVersion == "" {
			pluginVersion = distributionVersion(filepath.Dir(filepath.Dir(path)), filepath.Base(filepath.Dir(path)))
		}
		if pluginVersion != "" && !strings.HasPrefix(pluginVersion, "v") {
			pluginVersion = "v" + pluginVersion
		}
		packages = append(packages, &pulumirpc.PackageDependency{
			Name: name, Kind: "resource", Version: pluginVersion, Server: manifest.Server,
		})
	}
	return packages, nil
}

// distributionVersion is the Version of the installed distribution whose RECORD lists the package folder
// (a pulumi-plugin.json may leave the version to the distribution, as tencentcloud-iac-pulumi's does).
func distributionVersion(sitePackages, packageDir string) string {
	records, _ := filepath.Glob(filepath.Join(sitePackages, "*.dist-info", "RECORD"))
	for _, record := range records {
		raw, err := os.ReadFile(record)
		if err != nil || !bytes.Contains(raw, []byte(packageDir+"/pulumi-plugin.json")) {
			continue
		}
		metadata, err := os.ReadFile(filepath.Join(filepath.Dir(record), "METADATA"))
		if err != nil {
			return ""
		}
		for _, line := range strings.Split(string(metadata), "\n") {
			if v, ok := strings.CutPrefix(line, "Version: "); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

func (h *host) GetRequiredPackages(
	_ context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	python, err := virtualenvPython(req.GetInfo(), programRoot(req.GetInfo()))
	if err != nil {
		return nil, err
	}
	packages, err := requiredPackages(python)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: packages}, nil
}

func (h *host) GetRequiredPlugins(
	_ context.Context, req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	python, err := virtualenvPython(req.GetInfo(), programRoot(req.GetInfo()))
	if err != nil {
		return nil, err
	}
	packages, err := requiredPackages(python)
	if err != nil {
		return nil, err
	}
	plugins := make([]*pulumirpc.PluginDependency, 0, len(packages))
	for _, p := range packages {
		plugins = append(plugins, &pulumirpc.PluginDependency{
			Name: p.GetName(), Kind: p.GetKind(), Version: p.GetVersion(), Server: p.GetServer(),
		})
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: plugins}, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	root := programRoot(req.GetInfo())
	python, err := virtualenvPython(req.GetInfo(), root)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(h.execScript); err != nil {
		return nil, fmt.Errorf("stand-in Python host: %s is missing (run make engine): %w", h.execScript, err)
	}
	program := req.GetProgram()
	if req.GetInfo().GetEntryPoint() != "" {
		program = filepath.Join(req.GetInfo().GetProgramDirectory(), req.GetInfo().GetEntryPoint())
	}
	args := []string{
		"-u", h.execScript,
		"--monitor", req.GetMonitorAddress(),
		"--engine", h.engineAddress,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--dry_run", strconv.FormatBool(req.GetDryRun()),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
		"--root_directory", root,
	}
	if req.GetOrganization() != "" {
		args = append(args, "--organization", req.GetOrganization())
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secrets, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = req.GetPwd()
	cmd.Env = append(os.Environ(),
		"PULUMI_CONFIG="+string(config),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secrets),
		"PYTHONUNBUFFERED=1",
	)
	// The program's output goes where this host's goes: the CLI shows it.
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	err = cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return &pulumirpc.RunResponse{}, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == bailExitCode:
		return &pulumirpc.RunResponse{Bail: true}, nil
	case errors.As(err, &exitErr):
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode())}, nil
	default:
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
}

// streamWriter sends each write to the CLI as one RunPluginResponse (stdout or stderr).
type streamWriter struct {
	mu     *sync.Mutex
	server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]
	stderr bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	chunk := append([]byte(nil), p...)
	response := &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: chunk}}
	if w.stderr {
		response = &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: chunk}}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.server.Send(response); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *host) RunPlugin(
	req *pulumirpc.RunPluginRequest, server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse],
) error {
	pluginDir := req.GetInfo().GetProgramDirectory()
	python, err := virtualenvPython(req.GetInfo(), pluginDir)
	if err != nil {
		return err
	}
	var args []string
	if req.GetKind() == "analyzer" {
		// A policy pack: pulumi_policy's entry module serves the Analyzer for the pack in pluginDir.
		args = append([]string{"-u", "-m", "pulumi.policy"}, req.GetArgs()...)
		args = append(args, pluginDir)
	} else {
		args = append([]string{"-u", pluginDir}, req.GetArgs()...)
	}
	cmd := exec.CommandContext(server.Context(), python, args...)
	cmd.Dir = req.GetPwd()
	cmd.Env = append(append([]string{}, req.GetEnv()...), "PYTHONUNBUFFERED=1")
	var mu sync.Mutex
	cmd.Stdout = streamWriter{mu: &mu, server: server}
	cmd.Stderr = streamWriter{mu: &mu, server: server, stderr: true}
	err = cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return server.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(code)}})
}

func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	base := req.GetDirectory()
	if req.GetInfo() != nil {
		base = programRoot(req.GetInfo())
	}
	python, err := virtualenvPython(req.GetInfo(), base)
	if err != nil {
		return err
	}
	message := fmt.Sprintf("stand-in Python host: installs nothing; using %s as it is\n", python)
	return server.Send(&pulumirpc.InstallDependenciesResponse{Stdout: []byte(message)})
}

func (h *host) About(_ context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	python, err := virtualenvPython(req.GetInfo(), programRoot(req.GetInfo()))
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(python, "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: python,
		Version:    strings.TrimSpace(string(out)),
		Metadata:   map[string]string{"languageHost": "gpushare stand-in (engine/python-language-host)"},
	}, nil
}

func (h *host) GetProgramDependencies(
	_ context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	python, err := virtualenvPython(req.GetInfo(), programRoot(req.GetInfo()))
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check").Output()
	if err != nil {
		return nil, fmt.Errorf("stand-in Python host: pip list: %w", err)
	}
	var listed []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(out, &listed); err != nil {
		return nil, fmt.Errorf("stand-in Python host: pip list: %w", err)
	}
	dependencies := make([]*pulumirpc.DependencyInfo, 0, len(listed))
	for _, d := range listed {
		dependencies = append(dependencies, &pulumirpc.DependencyInfo{Name: d.Name, Version: d.Version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: dependencies}, nil
}

// The methods this stand-in does not implement answer Unimplemented through the embedded server; these
// say why instead.
func (h *host) GenerateProject(context.Context, *pulumirpc.GenerateProjectRequest) (*pulumirpc.GenerateProjectResponse, error) {
	return nil, status.Error(codes.Unimplemented, "stand-in Python host: no code generation")
}
