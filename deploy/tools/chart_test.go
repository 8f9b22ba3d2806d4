package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	hlint "helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/conduit"

// kubeVersion is the cluster version the chart is rendered for.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

// The values files CI renders: each must lint strictly, render, decode
// into the Kubernetes API types and keep the invariants below.
var valuesFiles = []string{"minimal-values.yaml", "production-values.yaml", "tls-values.yaml", "cloud-values.yaml"}

// secretMarker is in every secret value of the values files: it may appear
// in a Secret and nowhere else.
const secretMarker = "SECRET-"

// secretName is a setting's name that holds a secret (the schema refuses
// one in config.extraEnv).
var secretName = regexp.MustCompile(`(SECRET|_KEY|_KEYS|TOKEN|PASSWORD|DATABASE_URL)$`)

func loadValues(t *testing.T, file string) map[string]any {
	t.Helper()
	vals, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "ci", file))
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// lint is `helm lint --strict` (helm's own linter, as the CLI runs it): a
// warning fails too.
func lint(vals map[string]any) error {
	l := hlint.AllWithKubeVersionAndSchemaValidation(chartDir, vals, "conduit", kubeVersion, false)
	var errs []string
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, m.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("helm lint --strict: %s", strings.Join(errs, "; "))
	}
	return nil
}

// render is `helm template` for a first install: the chart's values
// checked against values.schema.json, every template rendered by Helm's
// engine (hooks included), NOTES.txt left out. Helm's action package,
// which a release needs, is not linked: it would double what CI compiles.
func render(vals map[string]any) (string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return "", err
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return "", err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion
	caps.APIVersions = append(caps.APIVersions, "monitoring.coreos.com/v1")
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, chartutil.ReleaseOptions{Name: "conduit", Namespace: "conduit", Revision: 1, IsInstall: true}, caps, false)
	if err != nil {
		return "", err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if !strings.HasSuffix(name, "NOTES.txt") && !strings.HasPrefix(filepath.Base(name), "_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out strings.Builder
	for _, name := range names {
		out.WriteString("\n---\n# Source: " + name + "\n" + files[name])
	}
	return out.String(), nil
}

// objects is what one values file rendered, decoded.
type objects struct {
	configMaps  []corev1.ConfigMap
	secrets     []corev1.Secret
	services    []corev1.Service
	deployments []appsv1.Deployment
	pdbs        []policyv1.PodDisruptionBudget
	hpas        []autoscalingv2.HorizontalPodAutoscaler
	jobs        []batchv1.Job
	monitors    []monitoringv1.ServiceMonitor
	accounts    []corev1.ServiceAccount
}

// decode reads every rendered document strictly into its API type: an
// unknown field, a duplicate key, a wrong type or an unknown kind fails.
func decode(manifest string) (*objects, error) {
	o := &objects{}
	for name, doc := range releaseutil.SplitManifests(manifest) {
		var head metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if head.Kind == "" {
			continue // an empty document (a template that rendered nothing)
		}
		var err error
		switch head.APIVersion + "/" + head.Kind {
		case "v1/ConfigMap":
			o.configMaps, err = strict(doc, o.configMaps)
		case "v1/Secret":
			o.secrets, err = strict(doc, o.secrets)
		case "v1/Service":
			o.services, err = strict(doc, o.services)
		case "v1/ServiceAccount":
			o.accounts, err = strict(doc, o.accounts)
		case "apps/v1/Deployment":
			o.deployments, err = strict(doc, o.deployments)
		case "policy/v1/PodDisruptionBudget":
			o.pdbs, err = strict(doc, o.pdbs)
		case "autoscaling/v2/HorizontalPodAutoscaler":
			o.hpas, err = strict(doc, o.hpas)
		case "batch/v1/Job":
			o.jobs, err = strict(doc, o.jobs)
		case "monitoring.coreos.com/v1/ServiceMonitor":
			o.monitors, err = strict(doc, o.monitors)
		default:
			err = fmt.Errorf("kind %s %s is not one the test knows: add its API type", head.APIVersion, head.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %v", name, head.Kind, err)
		}
	}
	return o, nil
}

func strict[T any](doc string, list []T) ([]T, error) {
	var v T
	if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
		return list, err
	}
	return append(list, v), nil
}

func TestChartLintsRendersAndDecodes(t *testing.T) {
	roles := productionRoles(t)
	for _, file := range valuesFiles {
		t.Run(strings.TrimSuffix(file, "-values.yaml"), func(t *testing.T) {
			vals := loadValues(t, file)
			if err := lint(vals); err != nil {
				t.Fatal(err)
			}
			manifest, err := render(vals)
			if err != nil {
				t.Fatal(err)
			}
			o, err := decode(manifest)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, o, vals, roles)
		})
	}
}

func checkInvariants(t *testing.T, o *objects, vals map[string]any, roles []string) {
	t.Helper()
	existing, _ := chartutil.Values(vals).PathValue("secrets.existingSecret")
	tlsSecret, _ := chartutil.Values(vals).PathValue("temporal.tls.existingSecret")

	// No secret outside a Secret: not in a ConfigMap, not in a plain env
	// value, under no secret-looking name.
	settings := map[string]string{}
	for _, cm := range o.configMaps {
		for k, v := range cm.Data {
			settings[k] = v
			if strings.Contains(v, secretMarker) || strings.Contains(v, "BEGIN ") {
				t.Errorf("ConfigMap %s: %s holds a secret", cm.Name, k)
			}
			if secretName.MatchString(k) {
				t.Errorf("ConfigMap %s: %s is a secret's name", cm.Name, k)
			}
		}
	}
	inSecrets := false
	secretNames := map[string]bool{}
	for _, s := range o.secrets {
		secretNames[s.Name] = true
		for _, v := range s.StringData {
			inSecrets = inSecrets || strings.Contains(v, secretMarker)
		}
	}
	if existing == nil || existing == "" {
		if !inSecrets {
			t.Errorf("no Secret holds the values' secrets")
		}
	} else {
		secretNames[existing.(string)] = true
	}
	if tlsSecret != nil && tlsSecret != "" {
		secretNames[tlsSecret.(string)] = true
	}
	if settings["CONDUIT_TEMPORAL_ADDRESS"] == "" {
		t.Errorf("no CONDUIT_TEMPORAL_ADDRESS in the ConfigMap")
	}

	byRole := map[string]appsv1.Deployment{}
	for _, d := range o.deployments {
		byRole[d.Spec.Template.Labels["app.kubernetes.io/component"]] = d
		spec := d.Spec.Template.Spec
		for _, c := range spec.Containers {
			if len(c.Args) != 1 || !slices.Contains(roles, c.Args[0]) {
				t.Errorf("%s: args %v are not one of the binary's commands %v", d.Name, c.Args, roles)
			}
			for _, e := range c.Env {
				if strings.Contains(e.Value, secretMarker) || secretName.MatchString(e.Name) {
					t.Errorf("%s: plain env %s holds a secret", d.Name, e.Name)
				}
			}
			for _, ef := range c.EnvFrom {
				if ef.SecretRef != nil && !secretNames[ef.SecretRef.Name] {
					t.Errorf("%s: envFrom names Secret %s, which is neither rendered nor given", d.Name, ef.SecretRef.Name)
				}
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: resources %+v lack a CPU or memory request or a memory limit", d.Name, c.Resources)
			}
			if c.ReadinessProbe == nil {
				t.Errorf("%s: no readiness probe", d.Name)
			}
		}
		for _, v := range spec.Volumes {
			if v.Secret != nil && !secretNames[v.Secret.SecretName] {
				t.Errorf("%s: volume %s names Secret %s, which is neither rendered nor given", d.Name, v.Name, v.Secret.SecretName)
			}
		}
	}
	fe, ok := byRole["frontend"]
	if !ok {
		t.Fatalf("no frontend Deployment")
	}
	wk, ok := byRole["worker"]
	if !ok {
		t.Fatalf("no worker Deployment")
	}
	// The frontend: alive on /livez, ready on /healthz (which fails while
	// PostgreSQL or Temporal is unreachable).
	c := fe.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "frontend" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/livez" ||
		c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("frontend probes: liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	// The worker: ready while `conduit health` passes; its grace covers
	// the drain.
	w := wk.Spec.Template.Spec.Containers[0]
	if w.Args[0] != "worker" || w.ReadinessProbe.Exec == nil || !slices.Contains(roles, w.ReadinessProbe.Exec.Command[len(w.ReadinessProbe.Exec.Command)-1]) {
		t.Errorf("worker: args %v readiness %+v", w.Args, w.ReadinessProbe)
	}
	stop, err := time.ParseDuration(settings["CONDUIT_TEMPORAL_STOP_TIMEOUT"])
	if err != nil {
		t.Fatalf("CONDUIT_TEMPORAL_STOP_TIMEOUT %q: %v", settings["CONDUIT_TEMPORAL_STOP_TIMEOUT"], err)
	}
	if g := wk.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < stop+10*time.Second {
		t.Errorf("worker termination grace %v does not cover temporal.stop_timeout %s and a margin", g, stop)
	}

	// A PodDisruptionBudget selects each role's pods.
	for role, d := range byRole {
		found := false
		for _, p := range o.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			found = found || sel.Matches(labels.Set(d.Spec.Template.Labels))
		}
		if !found {
			t.Errorf("no PodDisruptionBudget selects the %s pods", role)
		}
	}

	// Frontends autoscale unless fixed replicas were asked for.
	hpaOn, _ := chartutil.Values(vals).PathValue("frontend.autoscaling.enabled")
	if hpaOn == nil || hpaOn == true {
		if len(o.hpas) != 1 || o.hpas[0].Spec.ScaleTargetRef.Name != fe.Name || fe.Spec.Replicas != nil {
			t.Errorf("HPA %+v for frontend %s (replicas %v): want one HPA and no fixed replicas", o.hpas, fe.Name, fe.Spec.Replicas)
		}
	} else if len(o.hpas) != 0 || fe.Spec.Replicas == nil {
		t.Errorf("autoscaling off: %d HPAs, replicas %v", len(o.hpas), fe.Spec.Replicas)
	}

	// Migrations: one hook Job per install and upgrade.
	if len(o.jobs) != 1 || o.jobs[0].Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" || !slices.Equal(o.jobs[0].Spec.Template.Spec.Containers[0].Args, []string{"migrate"}) {
		t.Errorf("migration jobs: %+v", o.jobs)
	}

	// Metrics: a "metrics" port on a Service of each role, and the
	// ServiceMonitor when asked for.
	metricsOn, _ := chartutil.Values(vals).PathValue("metrics.enabled")
	monitorOn, _ := chartutil.Values(vals).PathValue("metrics.serviceMonitor.enabled")
	if metricsOn == true {
		if settings["CONDUIT_METRICS_ADDR"] == "" {
			t.Errorf("metrics on without CONDUIT_METRICS_ADDR")
		}
		for role, d := range byRole {
			served := false
			for _, s := range o.services {
				if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
					for _, p := range s.Spec.Ports {
						served = served || p.Name == "metrics"
					}
				}
			}
			if !served {
				t.Errorf("no Service exposes the %s pods' metrics port", role)
			}
		}
	}
	if (metricsOn == true && monitorOn == true) != (len(o.monitors) == 1) {
		t.Errorf("metrics %v, serviceMonitor %v: %d ServiceMonitors", metricsOn, monitorOn, len(o.monitors))
	}
	for _, m := range o.monitors {
		if len(m.Spec.Endpoints) == 0 || m.Spec.Endpoints[0].Port != "metrics" {
			t.Errorf("ServiceMonitor endpoints %+v", m.Spec.Endpoints)
		}
	}
}

// Values the chart must refuse, each with the sentence that says why.
func TestChartRefusesBadValues(t *testing.T) {
	base := func() map[string]any { return loadValues(t, "minimal-values.yaml") }
	set := func(v map[string]any, path string, val any) map[string]any {
		parts := strings.Split(path, ".")
		m := v
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = val
		return v
	}
	for name, c := range map[string]struct {
		vals map[string]any
		want string
	}{
		"a secret in the ConfigMap": {set(base(), "config.extraEnv", map[string]any{"CONDUIT_OAUTH_SECRET": "x"}), "CONDUIT_OAUTH_SECRET"},
		"a non-CONDUIT variable":    {set(base(), "config.extraEnv", map[string]any{"PATH": "/x"}), "PATH"},
		"a chart setting in extraEnv": {set(base(), "config.extraEnv", map[string]any{"CONDUIT_TEMPORAL_STOP_TIMEOUT": "1s"}),
			"sets itself"},
		"no database":                    {set(base(), "secrets.databaseUrl", ""), "databaseUrl"},
		"existingSecret and a value":     {set(base(), "secrets.existingSecret", "mine"), "existingSecret"},
		"an API key without TLS":         {set(base(), "secrets.temporalApiKey", "k"), "TLS"},
		"mutual TLS without a cert":      {set(set(base(), "temporal.tls.enabled", true), "temporal.tls.mutual", true), "certPem"},
		"a typo'd key":                   {set(base(), "frontend.replicaz", 3), "replicaz"},
		"a negative drain":               {set(base(), "temporal.stopTimeoutSeconds", -1), "stopTimeoutSeconds"},
		"an address without a port":      {set(base(), "temporal.address", "temporal"), "address"},
		"a short OAuth secret":           {set(base(), "secrets.oauthSecret", "short"), "oauthSecret"},
		"a database URL of another kind": {set(base(), "secrets.databaseUrl", "mysql://x"), "databaseUrl"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(c.vals)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("rendered (error %v), want a refusal naming %q", err, c.want)
			}
		})
	}
}

// Inline PEM for mutual TLS goes into a Secret of its own, mounted where
// temporal.tls.* points.
func TestChartInlineTemporalTLS(t *testing.T) {
	vals := loadValues(t, "minimal-values.yaml")
	vals["temporal"] = map[string]any{"address": "t:7233", "namespace": "default", "stopTimeoutSeconds": 600,
		"tls": map[string]any{"enabled": true, "mutual": true, "privateCA": true, "serverName": "t.internal",
			"certPem": "-----BEGIN CERTIFICATE-----\nSECRET-cert\n-----END CERTIFICATE-----\n",
			"keyPem":  "-----BEGIN PRIVATE KEY-----\nSECRET-key\n-----END PRIVATE KEY-----\n",
			"caPem":   "-----BEGIN CERTIFICATE-----\nSECRET-ca\n-----END CERTIFICATE-----\n"}}
	if err := lint(vals); err != nil {
		t.Fatal(err)
	}
	manifest, err := render(vals)
	if err != nil {
		t.Fatal(err)
	}
	o, err := decode(manifest)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, o, vals, productionRoles(t))
	var files map[string]string
	for _, s := range o.secrets {
		if strings.HasSuffix(s.Name, "-temporal-tls") {
			files = s.StringData
		}
	}
	if !strings.Contains(files["tls.crt"], "SECRET-cert") || !strings.Contains(files["tls.key"], "SECRET-key") || !strings.Contains(files["ca.crt"], "SECRET-ca") {
		t.Fatalf("the TLS Secret: %v", files)
	}
	settings := o.configMaps[0].Data
	for k, want := range map[string]string{
		"CONDUIT_TEMPORAL_TLS_CERT_FILE":   "/etc/conduit/temporal-tls/tls.crt",
		"CONDUIT_TEMPORAL_TLS_KEY_FILE":    "/etc/conduit/temporal-tls/tls.key",
		"CONDUIT_TEMPORAL_TLS_CA_FILE":     "/etc/conduit/temporal-tls/ca.crt",
		"CONDUIT_TEMPORAL_TLS_SERVER_NAME": "t.internal",
	} {
		if settings[k] != want {
			t.Errorf("%s = %q, want %q", k, settings[k], want)
		}
	}
	for _, d := range o.deployments {
		mounted := false
		for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
			mounted = mounted || (m.Name == "temporal-tls" && m.MountPath == "/etc/conduit/temporal-tls" && m.ReadOnly)
		}
		if !mounted {
			t.Errorf("%s does not mount the Temporal TLS files", d.Name)
		}
	}
}

// productionRoles are the commands of the production binary, read from
// app/cli.go (this module does not import the main one: its dependencies
// stay apart).
func productionRoles(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../../app/cli.go")
	if err != nil {
		t.Fatal(err)
	}
	names, err := commandNames(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"frontend", "worker", "all", "migrate", "health"} {
		if !slices.Contains(names, want) {
			t.Fatalf("app/cli.go has no %q command (found %v)", want, names)
		}
	}
	return names
}

// The decoder the checks stand on refuses what the API server would: an
// unknown field (a misindented probe), a wrong type, a duplicate key and
// an unknown kind.
func TestDecodeIsStrict(t *testing.T) {
	ok := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: i, readinessProbe: {exec: {command: [a]}}}]\n"
	if _, err := decode(ok); err != nil {
		t.Fatalf("a valid Deployment: %v", err)
	}
	for name, doc := range map[string]string{
		"an unknown field": strings.Replace(ok, "readinessProbe: {exec: {command: [a]}}", "readinessProbe: {exec: {command: [a]}, path: /x}", 1),
		"a wrong type":     strings.Replace(ok, "{name: x}", "{name: [x]}", 1),
		"a duplicate key":  strings.Replace(ok, "{name: x}", "{name: x, name: y}", 1),
		"an unknown kind":  strings.Replace(ok, "kind: Deployment", "kind: Deploymnet", 1),
	} {
		if _, err := decode(doc); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
