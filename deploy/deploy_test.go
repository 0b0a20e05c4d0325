// Package deploy checks the files operators deploy sluice with against each
// other and against sluice itself: the Kubernetes manifests decode strictly
// with the API's own types, the container's binary is built as the
// Dockerfile builds it and is static, the systemd unit passes
// systemd-analyze, and all of them name the flags, ports, paths and exit
// codes the binary and the example configs really have.
package deploy

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sluicehq/sluice/configs"
	"github.com/sluicehq/sluice/gate/spec"
)

// The image's user and the paths the files share.
const (
	nonroot    = 65532 // distroless's nonroot user and group
	binaryPath = "/usr/local/bin/sluice"
)

// readFile reads a file of the repository, relative to deploy/.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadConfig loads one of the example configs.
func loadConfig(t *testing.T, name string) *configs.Config {
	t.Helper()
	c, err := configs.Parse(name, readFile(t, "../configs/examples/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// port returns the port of a "host:port" listen address.
func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// manifests are the objects of kubernetes.yaml, decoded strictly: an unknown
// or duplicated field, or a kind this test does not know, fails the test.
type manifests struct {
	secret     *corev1.Secret
	configMap  *corev1.ConfigMap
	deployment *appsv1.Deployment
	service    *corev1.Service
}

func decodeManifests(t *testing.T) manifests {
	t.Helper()
	var m manifests
	for i, doc := range regexp.MustCompile(`(?m)^---\n`).Split(string(readFile(t, "kubernetes.yaml")), -1) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		switch meta.APIVersion + " " + meta.Kind {
		case " ": // comments only
			if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) != "" {
				t.Fatalf("document %d has no apiVersion and kind", i)
			}
			continue
		case "v1 Secret":
			m.secret = new(corev1.Secret)
			obj = m.secret
		case "v1 ConfigMap":
			m.configMap = new(corev1.ConfigMap)
			obj = m.configMap
		case "apps/v1 Deployment":
			m.deployment = new(appsv1.Deployment)
			obj = m.deployment
		case "v1 Service":
			m.service = new(corev1.Service)
			obj = m.service
		default:
			t.Fatalf("document %d: unexpected %s %s", i, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s): %v", i, meta.Kind, err)
		}
	}
	if m.secret == nil || m.configMap == nil || m.deployment == nil || m.service == nil {
		t.Fatalf("want a Secret, a ConfigMap, a Deployment and a Service, got %+v", m)
	}
	return m
}

// TestStrictDecodingRejectsUnknownFields checks that the decoding the other
// tests rely on would catch a misspelt field.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	var d appsv1.Deployment
	err := yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 2\n"), &d)
	if err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// TestKubernetes checks the manifests against the sidecar example they run
// and against each other.
func TestKubernetes(t *testing.T) {
	m := decodeManifests(t)
	cfg := loadConfig(t, "sidecar.toml")

	// The ConfigMap holds the example as it is.
	want := string(readFile(t, "../configs/examples/sidecar.toml"))
	if got := m.configMap.Data["sluice.toml"]; got != want {
		gl, wl := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
		i := 0
		for i < min(len(gl), len(wl)) && gl[i] == wl[i] {
			i++
		}
		t.Errorf("the ConfigMap's sluice.toml is not configs/examples/sidecar.toml: copy the file in again; line %d differs:\n%q\n%q",
			i+1, strings.Join(gl[i:min(i+1, len(gl))], ""), strings.Join(wl[i:min(i+1, len(wl))], ""))
	}

	pod := m.deployment.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("want sluice as the one init container and the app as the one container")
	}
	s, app := pod.InitContainers[0], pod.Containers[0]
	if s.RestartPolicy == nil || *s.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("sluice is not a native sidecar: restartPolicy %v", s.RestartPolicy)
	}

	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range s.VolumeMounts {
		mounts[vm.Name] = vm
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mountOf := func(path string, source func(corev1.Volume) bool) (corev1.VolumeMount, corev1.Volume) {
		t.Helper()
		for name, vm := range mounts {
			if vm.MountPath == path && source(volumes[name]) {
				return vm, volumes[name]
			}
		}
		t.Fatalf("no volume of the right kind mounted at %s in the sluice container", path)
		return corev1.VolumeMount{}, corev1.Volume{}
	}

	// The config: the ConfigMap mounted where -config points.
	if !slices.Equal(s.Args[:3], []string{"run", "-config", "/etc/sluice/sluice.toml"}) {
		t.Errorf("sluice args %q, want run -config /etc/sluice/sluice.toml first", s.Args)
	}
	if _, v := mountOf("/etc/sluice", func(v corev1.Volume) bool { return v.ConfigMap != nil }); v.ConfigMap.Name != m.configMap.Name {
		t.Errorf("/etc/sluice holds ConfigMap %q, want %q", v.ConfigMap.Name, m.configMap.Name)
	}
	// The token: the Secret mounted where admin.token_file is.
	tokenDir, tokenKey := filepath.Split(cfg.Admin.TokenFile)
	_, v := mountOf(strings.TrimSuffix(tokenDir, "/"), func(v corev1.Volume) bool { return v.Secret != nil })
	if v.Secret.SecretName != m.secret.Name {
		t.Errorf("the token volume holds Secret %q, want %q", v.Secret.SecretName, m.secret.Name)
	}
	if _, ok := m.secret.StringData[tokenKey]; !ok {
		t.Errorf("the Secret has no key %q (admin.token_file %s)", tokenKey, cfg.Admin.TokenFile)
	}
	if mode := v.Secret.DefaultMode; mode == nil || *mode&0o040 == 0 || *mode&0o007 != 0 {
		t.Errorf("the token's mode must let the fsGroup read it and no one else: %v", mode)
	}
	// The state file: in a writable emptyDir.
	if vm, _ := mountOf(filepath.Dir(cfg.Control.StateFile), func(v corev1.Volume) bool { return v.EmptyDir != nil }); vm.ReadOnly {
		t.Errorf("the state volume is read-only")
	}

	// Ports: what sluice listens on, on every address of the pod.
	ports := map[string]int32{}
	for _, p := range s.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, addr := range map[string]string{"http": cfg.Server.Listen, "admin": cfg.Admin.Listen} {
		if !strings.HasPrefix(addr, "0.0.0.0:") {
			t.Errorf("%s listens on %s: the kubelet and the Service cannot reach it", name, addr)
		}
		if ports[name] != port(t, addr) {
			t.Errorf("port %s = %d, the config listens on %s", name, ports[name], addr)
		}
	}
	// Probes on the admin API's public health routes.
	for what, p := range map[string]*corev1.Probe{"/readyz": s.ReadinessProbe, "/livez": s.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != what || p.HTTPGet.Port.String() != "admin" {
			t.Errorf("sluice's probe of %s: %+v", what, p)
		}
	}
	// The app's readiness goes through sluice and lands in the group that is
	// never shed.
	if p := app.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "http" {
		t.Errorf("the app's readiness probe does not go through sluice: %+v", p)
	} else if g := firstMatch(cfg, p.HTTPGet.Path); g == nil || g.Priority != spec.Priority(spec.LevelCritical) {
		t.Errorf("the app's readiness probe %s lands in group %+v, want a critical one", p.HTTPGet.Path, g)
	}
	if cfg.Upstream.URL != "http://127.0.0.1:9000" {
		t.Errorf("upstream.url %s: the app container's comment says 127.0.0.1:9000", cfg.Upstream.URL)
	}

	checkDrainAndHardening(t, pod, s, app, cfg)

	// The Service sends traffic to sluice and selects this Deployment's pods.
	labels := m.deployment.Spec.Template.Labels
	for k, v := range m.service.Spec.Selector {
		if labels[k] != v {
			t.Errorf("the Service selects %s=%s, the pods have %v", k, v, labels)
		}
	}
	for _, p := range m.service.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("the Service's port %s targets %s, not a port of sluice", p.Name, p.TargetPort.String())
		}
	}
}

// checkDrainAndHardening checks the pod's shutdown timing and the sluice
// container s's lockdown (app is the app's container, cfg the config).
func checkDrainAndHardening(t *testing.T, spec corev1.PodSpec, s, app corev1.Container, cfg *configs.Config) {
	t.Helper()
	// Drain: the app's preStop, then its drain, then sluice's grace, within
	// terminationGracePeriodSeconds.
	if app.Lifecycle == nil || app.Lifecycle.PreStop == nil || app.Lifecycle.PreStop.Sleep == nil {
		t.Fatal("the app has no preStop sleep")
	}
	preStop := time.Duration(app.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	grace := time.Duration(cfg.Server.ShutdownGrace)
	if spec.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	if total := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; preStop+grace+10*time.Second > total {
		t.Errorf("terminationGracePeriodSeconds %v leaves the app under 10s to drain after preStop %v, before sluice's shutdown_grace %v", total, preStop, grace)
	}

	// Hardening: the image's non-root user, nothing writable but volumes.
	sc := s.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != nonroot ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("sluice's securityContext is not locked down: %+v", sc)
	}
	if psc := spec.SecurityContext; psc == nil || psc.FSGroup == nil || *psc.FSGroup != nonroot {
		t.Errorf("the pod's fsGroup must be %d so that sluice reads the token and writes the state", nonroot)
	}
}

// firstMatch returns the group that takes a GET of path: the first whose
// match it meets.
func firstMatch(c *configs.Config, path string) *spec.Group {
	for i := range c.Groups {
		if c.Groups[i].Match.Matches("GET", "", path, nil) {
			return &c.Groups[i]
		}
	}
	return nil
}

// dockerfile is deploy/Dockerfile's instructions, stage by stage.
type dockerfile struct {
	stages [][]string // instruction lines (continuations joined), per FROM
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	var d dockerfile
	text := strings.ReplaceAll(string(readFile(t, "Dockerfile")), "\\\n", " ")
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "FROM "):
			d.stages = append(d.stages, []string{line})
		case len(d.stages) > 0:
			d.stages[len(d.stages)-1] = append(d.stages[len(d.stages)-1], line)
		}
	}
	return d
}

// TestDockerfile checks the image: built by build.sh, a distroless or
// scratch base, a non-root user, sluice as the entry point, the example
// config's ports and state directory.
func TestDockerfile(t *testing.T) {
	d := parseDockerfile(t)
	if len(d.stages) != 2 {
		t.Fatalf("want a build stage and the image, got %d stages", len(d.stages))
	}
	build, image := d.stages[0], d.stages[1]
	if !slices.ContainsFunc(build, func(l string) bool {
		return strings.HasPrefix(l, "RUN ") && strings.Contains(l, "deploy/build.sh /out/sluice")
	}) {
		t.Errorf("the build stage does not build with deploy/build.sh: %q", build)
	}
	if from := image[0]; !strings.HasPrefix(from, "FROM gcr.io/distroless/static") && from != "FROM scratch" {
		t.Errorf("the image is %s, want distroless static or scratch", from)
	}
	want := []string{
		"COPY --from=build /out/sluice " + binaryPath,
		fmt.Sprintf("USER %d:%d", nonroot, nonroot),
		`ENTRYPOINT ["` + binaryPath + `"]`,
		`CMD ["run"]`,
	}
	cfg := loadConfig(t, "sidecar.toml")
	want = append(want,
		fmt.Sprintf("EXPOSE %d %d", port(t, cfg.Server.Listen), port(t, cfg.Admin.Listen)),
		fmt.Sprintf("COPY --from=build --chown=%d:%d /out/state %s", nonroot, nonroot, filepath.Dir(cfg.Control.StateFile)))
	for _, w := range want {
		if !slices.Contains(image, w) {
			t.Errorf("the image lacks %q:\n%s", w, strings.Join(image, "\n"))
		}
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// binary builds sluice with build.sh, as the Dockerfile does, once.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-deploy-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "sluice")
		cmd := exec.Command("sh", "deploy/build.sh", built)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "VERSION=v0.0.0-deploytest")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("deploy/build.sh: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// run runs the built binary and returns its stdout.
func run(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// TestStaticBinary builds the binary as the image's build stage does and
// checks that it is static (no program interpreter, no shared libraries),
// built as build.sh says (without the demo), and that it runs: its version, its embedded
// default config, and the example configs the deploy files use.
func TestStaticBinary(t *testing.T) {
	bin := binary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	// (With -trimpath, go build records no -ldflags: the version is checked
	// by running the binary.)
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["-tags"] != "nodemo" {
		t.Errorf("build settings %v: want CGO_ENABLED=0, -trimpath and -tags nodemo (no demo in the image)", settings)
	}
	// In a clone (not a git worktree, whose .git is a file that go build does
	// not follow), the revision is stamped, whatever GOFLAGS says.
	if fi, err := os.Stat("../.git"); err == nil && fi.IsDir() && settings["vcs.revision"] == "" {
		t.Errorf("build settings %v: no vcs.revision", settings)
	}

	if out := run(t, "version"); !strings.HasPrefix(out, "sluice v0.0.0-deploytest ") {
		t.Errorf("version: %q", out)
	}
	if out := run(t, "config"); out != string(configs.DefaultFile()) {
		t.Errorf("the binary's embedded default is not configs/default.toml:\n%s", out)
	}
	for _, name := range []string{"sidecar.toml", "host.toml"} {
		run(t, "check", "-q", "../configs/examples/"+name)
	}
}

// unit is the systemd unit's settings, by key, in order.
func unit(t *testing.T) map[string][]string {
	t.Helper()
	u := map[string][]string{}
	for line := range strings.Lines(string(readFile(t, "sluice.service"))) {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			u[k] = append(u[k], v)
		}
	}
	return u
}

// TestSystemdUnit checks sluice.service against the binary and host.toml:
// the command lines, the exit codes of `sluice help run`, the stop timeout
// against shutdown_grace, the state directory against the state file.
func TestSystemdUnit(t *testing.T) {
	u := unit(t)
	cfg := loadConfig(t, "host.toml")
	const config = "/etc/sluice/sluice.toml"
	for key, want := range map[string][]string{
		"ExecStart":                {binaryPath + " run -config " + config},
		"ExecReload":               {binaryPath + " check -q " + config, "/bin/kill -HUP $MAINPID"},
		"SuccessExitStatus":        {"3 4"},
		"RestartPreventExitStatus": {"2"},
		"Restart":                  {"on-failure"},
		"DynamicUser":              {"yes"},
		"StateDirectory":           {"sluice"},
		"RuntimeDirectory":         {"sluice"},
		"ProtectSystem":            {"strict"},
		"NoNewPrivileges":          {"yes"},
		"CapabilityBoundingSet":    {""},
	} {
		if !slices.Equal(u[key], want) {
			t.Errorf("%s=%q, want %q", key, u[key], want)
		}
	}
	help := run(t, "help", "run")
	for _, code := range []string{"\n  3  stopped by a signal", "\n  4  a second signal", "\n  2  wrong command line", "SIGHUP            reload the config file"} {
		if !strings.Contains(help, code) {
			t.Errorf("`sluice help run` no longer says %q: check the unit's exit statuses and ExecReload", strings.TrimSpace(code))
		}
	}
	if !strings.HasPrefix(cfg.Control.StateFile, "/var/lib/"+u["StateDirectory"][0]+"/") {
		t.Errorf("host.toml's state file %s is not in the unit's StateDirectory", cfg.Control.StateFile)
	}
	stop, err := time.ParseDuration(u["TimeoutStopSec"][0])
	if err != nil {
		t.Fatal(err)
	}
	if grace := time.Duration(cfg.Server.ShutdownGrace); stop < grace+5*time.Second {
		t.Errorf("TimeoutStopSec=%v: SIGKILL before host.toml's shutdown_grace %v and the state file are done", stop, grace)
	}
}

// TestSystemdAnalyze runs systemd-analyze on the unit, with ExecStart's
// binary pointed at the one built here (verify wants it to exist): verify
// must print nothing (it reports unknown keys and bad values only as
// warnings, with exit code 0), and the offline security review must rate
// the unit's exposure at most 2.0.
func TestSystemdAnalyze(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is missing: .ci/run installs it (apt package systemd)")
		}
		t.Skip("systemd-analyze is not installed")
	}
	text := strings.ReplaceAll(string(readFile(t, "sluice.service")), binaryPath, binary(t))
	path := filepath.Join(t.TempDir(), "sluice.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command("systemd-analyze", "security", "--offline=yes", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: %v\n%s", err, out)
	}
}
