package aws

import (
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

var testCA = []byte("-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n")

var testCAB64 = base64.StdEncoding.EncodeToString(testCA)

const testEndpoint = "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com"

// fullBootstrap sets every field, the kubelet's included.
func fullBootstrap() Bootstrap {
	return Bootstrap{
		ClusterName:     "prod",
		ClusterEndpoint: testEndpoint,
		CABundle:        testCA,
		ClusterCIDR:     "10.100.0.0/16",
		Labels:          map[string]string{"team": "web", "karpenter.sh/nodepool": "default"},
		Taints: []corev1.Taint{
			{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
			{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
		},
		Kubelet: &awsv1.KubeletConfiguration{
			ClusterDNS:                  []string{"10.100.0.10"},
			PodsPerCore:                 ptr.To[int32](4),
			SystemReserved:              map[string]string{"memory": "100Mi", "cpu": "100m"},
			KubeReserved:                map[string]string{"memory": "500Mi"},
			EvictionHard:                map[string]string{"memory.available": "5%"},
			EvictionSoft:                map[string]string{"memory.available": "10%"},
			EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
			EvictionMaxPodGracePeriod:   ptr.To[int32](60),
			ImageGCHighThresholdPercent: ptr.To[int32](85),
			ImageGCLowThresholdPercent:  ptr.To[int32](80),
			CPUCFSQuota:                 ptr.To(false),
		},
		MaxPods: 29,
	}
}

// minimalBootstrap is a cluster and nothing else.
func minimalBootstrap() Bootstrap {
	return Bootstrap{ClusterName: "prod", ClusterEndpoint: testEndpoint, CABundle: testCA}
}

// fullKubeletArgs are fullBootstrap's kubelet flags for AL2 and Windows.
const fullKubeletArgs = `--node-labels="karpenter.sh/nodepool=default,team=web"` +
	` --register-with-taints="dedicated=web:NoSchedule,karpenter.sh/unregistered:NoExecute"` +
	` --max-pods=29 --pods-per-core=4 --system-reserved="cpu=100m,memory=100Mi" --kube-reserved="memory=500Mi"` +
	` --eviction-hard="memory.available<5%" --eviction-soft="memory.available<10%"` +
	` --eviction-soft-grace-period="memory.available=1m30s" --eviction-max-pod-grace-period=60` +
	` --image-gc-high-threshold=85 --image-gc-low-threshold=80 --cpu-cfs-quota=false`

func userData(t *testing.T, family string, b Bootstrap, custom string) string {
	t.Helper()
	out, err := UserData(family, b, custom)
	if err != nil {
		t.Fatalf("UserData(%s): %v", family, err)
	}
	return out
}

// mimeParts reads out back as a MIME multi-part document.
func mimeParts(t *testing.T, out string) []mimePart {
	t.Helper()
	if !strings.HasPrefix(out, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=") {
		t.Fatalf("not a MIME multi-part document:\n%s", out)
	}
	parts, err := parseMIME(out)
	if err != nil {
		t.Fatalf("reading the MIME document back: %v\n%s", err, out)
	}
	return parts
}

func contentTypes(parts []mimePart) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.header.Get("Content-Type"))
	}
	return out
}

// jsonEqual compares got with the JSON want, whatever the key order.
func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want for %s: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %s\n want %s", what, raw, want)
	}
}

type testNodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster map[string]any `json:"cluster"`
		Kubelet *struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// ourNodeConfig checks that the last part is our NodeConfig and returns it.
func ourNodeConfig(t *testing.T, parts []mimePart) testNodeConfig {
	t.Helper()
	last := parts[len(parts)-1]
	if ct := last.header.Get("Content-Type"); ct != "application/node.eks.aws" {
		t.Fatalf("last part is %q, want application/node.eks.aws", ct)
	}
	var cfg testNodeConfig
	if err := yaml.Unmarshal([]byte(last.body), &cfg); err != nil {
		t.Fatalf("NodeConfig YAML: %v\n%s", err, last.body)
	}
	if cfg.APIVersion != "node.eks.aws/v1alpha1" || cfg.Kind != "NodeConfig" {
		t.Errorf("apiVersion %q kind %q, want node.eks.aws/v1alpha1 NodeConfig", cfg.APIVersion, cfg.Kind)
	}
	return cfg
}

func TestUserDataAL2023NodeConfig(t *testing.T) {
	parts := mimeParts(t, userData(t, awsv1.AMIFamilyAL2023, fullBootstrap(), ""))
	if len(parts) != 1 {
		t.Fatalf("%d parts, want our NodeConfig alone", len(parts))
	}
	cfg := ourNodeConfig(t, parts)
	jsonEqual(t, "spec.cluster", cfg.Spec.Cluster, `{"name":"prod","apiServerEndpoint":"`+testEndpoint+`",
		"certificateAuthority":"`+testCAB64+`","cidr":"10.100.0.0/16"}`)
	if cfg.Spec.Kubelet == nil {
		t.Fatal("no spec.kubelet")
	}
	jsonEqual(t, "spec.kubelet.config", cfg.Spec.Kubelet.Config, `{
		"clusterDNS": ["10.100.0.10"], "maxPods": 29, "podsPerCore": 4,
		"systemReserved": {"cpu": "100m", "memory": "100Mi"}, "kubeReserved": {"memory": "500Mi"},
		"evictionHard": {"memory.available": "5%"}, "evictionSoft": {"memory.available": "10%"},
		"evictionSoftGracePeriod": {"memory.available": "1m30s"}, "evictionMaxPodGracePeriod": 60,
		"imageGCHighThresholdPercent": 85, "imageGCLowThresholdPercent": 80, "cpuCFSQuota": false,
		"registerWithTaints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"},
			{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]}`)
	if want := []string{"--node-labels=karpenter.sh/nodepool=default,team=web"}; !reflect.DeepEqual(cfg.Spec.Kubelet.Flags, want) {
		t.Errorf("flags = %q, want %q", cfg.Spec.Kubelet.Flags, want)
	}
}

func TestUserDataAL2023LeavesUnknownsToTheAMI(t *testing.T) {
	cfg := ourNodeConfig(t, mimeParts(t, userData(t, awsv1.AMIFamilyAL2023, Bootstrap{ClusterName: "prod", ClusterEndpoint: testEndpoint}, "")))
	jsonEqual(t, "spec.cluster", cfg.Spec.Cluster, `{"name":"prod","apiServerEndpoint":"`+testEndpoint+`"}`)
	if cfg.Spec.Kubelet != nil {
		t.Errorf("spec.kubelet = %+v, want none: no max pods, labels, taints or kubelet settings", *cfg.Spec.Kubelet)
	}
}

func TestUserDataAL2023ClassMaxPodsWins(t *testing.T) {
	b := minimalBootstrap()
	b.MaxPods = 29
	b.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}
	cfg := ourNodeConfig(t, mimeParts(t, userData(t, awsv1.AMIFamilyAL2023, b, "")))
	jsonEqual(t, "spec.kubelet.config", cfg.Spec.Kubelet.Config, `{"maxPods": 110}`)
}

func TestUserDataAL2023MergesCustom(t *testing.T) {
	const script = "#!/bin/bash\necho 'hello: world'\n"
	const nodeConfigYAML = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n"
	const customMIME = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n" +
		"--BOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho --//\n" +
		"--BOUNDARY\nContent-Type: application/node.eks.aws\n\n" + nodeConfigYAML +
		"--BOUNDARY--\n"
	cases := []struct {
		name, custom string
		types        []string // content types of the class's parts
		bodies       []string
	}{
		{"shell script", script, []string{`text/x-shellscript; charset="us-ascii"`}, []string{script}},
		{"NodeConfig YAML", nodeConfigYAML, []string{"application/node.eks.aws"}, []string{nodeConfigYAML}},
		// Its script contains our usual boundary: the merged document
		// must pick another one to read back whole.
		{"MIME", customMIME, []string{`text/x-shellscript; charset="us-ascii"`, "application/node.eks.aws"},
			[]string{"#!/bin/bash\necho --//", strings.TrimSuffix(nodeConfigYAML, "\n")}},
		{"MIME after blank lines", "\n\n" + customMIME, []string{`text/x-shellscript; charset="us-ascii"`, "application/node.eks.aws"},
			[]string{"#!/bin/bash\necho --//", strings.TrimSuffix(nodeConfigYAML, "\n")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts := mimeParts(t, userData(t, awsv1.AMIFamilyAL2023, fullBootstrap(), c.custom))
			if len(parts) != len(c.types)+1 {
				t.Fatalf("parts %q, want the class's %q then ours", contentTypes(parts), c.types)
			}
			ourNodeConfig(t, parts)
			for i := range c.types {
				if got := parts[i].header.Get("Content-Type"); got != c.types[i] {
					t.Errorf("part %d is %q, want %q", i+1, got, c.types[i])
				}
				if parts[i].body != c.bodies[i] {
					t.Errorf("part %d body:\n got  %q\n want %q", i+1, parts[i].body, c.bodies[i])
				}
			}
		})
	}
}

func TestUserDataAL2023BadCustomNamesUserData(t *testing.T) {
	cases := map[string]string{
		"MIME not multipart":       "MIME-Version: 1.0\nContent-Type: text/plain\n\nhello\n",
		"MIME without a boundary":  "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nhello\n",
		"MIME never closed":        "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript\n\n#!/bin/bash\n",
		"MIME with no parts":       "Content-Type: multipart/mixed; boundary=\"//\"\n\nnothing here\n",
		"MIME part bad NodeConfig": "Content-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: application/node.eks.aws\n\nspec: [\n--//--\n",
		"NodeConfig bad YAML":      "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: [\n",
		"YAML but no NodeConfig":   "apiVersion: v1\nkind: ConfigMap\n",
		"script without #!":        "echo hello: world\n",
	}
	for name, custom := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := UserData(awsv1.AMIFamilyAL2023, fullBootstrap(), custom)
			if err == nil || !strings.Contains(err.Error(), "spec.userData") {
				t.Errorf("err = %v, want one naming spec.userData", err)
			}
		})
	}
}

// bootstrapScript returns the AL2 bootstrap part's script.
func bootstrapScript(t *testing.T, parts []mimePart) string {
	t.Helper()
	last := parts[len(parts)-1]
	if ct := last.header.Get("Content-Type"); ct != `text/x-shellscript; charset="us-ascii"` {
		t.Fatalf("last part is %q, want the bootstrap script", ct)
	}
	return last.body
}

func TestUserDataAL2BootstrapLine(t *testing.T) {
	ipv6 := func(dns, cidr string) Bootstrap {
		b := minimalBootstrap()
		b.ClusterCIDR = cidr
		if dns != "" {
			b.Kubelet = &awsv1.KubeletConfiguration{ClusterDNS: []string{dns}}
		}
		return b
	}
	head := "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n" +
		"/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint '" + testEndpoint + "' --b64-cluster-ca '" + testCAB64 + "'"
	cases := []struct {
		name string
		b    Bootstrap
		want string
	}{
		{"every setting", fullBootstrap(), head + " \\\n--dns-cluster-ip '10.100.0.10' \\\n--use-max-pods false \\\n" +
			"--kubelet-extra-args '" + fullKubeletArgs + "'\n"},
		{"nothing known: the AMI decides", minimalBootstrap(), head + "\n"},
		{"IPv6 DNS", ipv6("fd00:10:100::a", ""), head + " \\\n--ip-family ipv6 \\\n--dns-cluster-ip 'fd00:10:100::a'\n"},
		{"IPv6 service CIDR", ipv6("", "fd00:10:100::/108"), head + " \\\n--ip-family ipv6 \\\n--service-ipv6-cidr 'fd00:10:100::/108'\n"},
		{"max pods from the instance type", func() Bootstrap { b := minimalBootstrap(); b.MaxPods = 58; return b }(),
			head + " \\\n--use-max-pods false \\\n--kubelet-extra-args '--max-pods=58'\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts := mimeParts(t, userData(t, awsv1.AMIFamilyAL2, c.b, ""))
			if len(parts) != 1 {
				t.Fatalf("parts %q, want the bootstrap script alone", contentTypes(parts))
			}
			if got := bootstrapScript(t, parts); got != c.want {
				t.Errorf("script:\n got  %s\n want %s", got, c.want)
			}
		})
	}
}

// TestUserDataAL2QuotesForBash runs the bootstrap line through bash, with
// printf for bootstrap.sh, to see the words it would get.
func TestUserDataAL2QuotesForBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	b := minimalBootstrap()
	b.ClusterName = `it's "$(reboot)"`
	b.Labels = map[string]string{"team": "a-b_c.d"}
	script := bootstrapScript(t, mimeParts(t, userData(t, awsv1.AMIFamilyAL2, b, "")))
	line := script[strings.Index(script, "/etc/eks/bootstrap.sh"):]
	line = strings.Replace(line, "/etc/eks/bootstrap.sh", `printf '%s\n'`, 1)
	out, err := exec.Command(bash, "-c", line).Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, line)
	}
	want := strings.Join([]string{`it's "$(reboot)"`, "--apiserver-endpoint", testEndpoint, "--b64-cluster-ca", testCAB64,
		"--kubelet-extra-args", `--node-labels="team=a-b_c.d"`}, "\n") + "\n"
	if string(out) != want {
		t.Errorf("bootstrap.sh would get:\n%s\nwant:\n%s", out, want)
	}
}

func TestUserDataAL2MergesCustom(t *testing.T) {
	const script = "#!/bin/bash\necho hi\n"
	const customMIME = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"==X==\"\n\n" +
		"--==X==\nContent-Type: text/cloud-config\n\npackages: [jq]\n--==X==--\n"
	cases := []struct {
		name, custom string
		types        []string
		bodies       []string
	}{
		{"shell script", script, []string{`text/x-shellscript; charset="us-ascii"`}, []string{script}},
		// AL2 has no NodeConfig: whatever is not MIME is a script, as Karpenter has it.
		{"YAML", "packages: [jq]\n", []string{`text/x-shellscript; charset="us-ascii"`}, []string{"packages: [jq]\n"}},
		{"MIME", customMIME, []string{"text/cloud-config"}, []string{"packages: [jq]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts := mimeParts(t, userData(t, awsv1.AMIFamilyAL2, fullBootstrap(), c.custom))
			if len(parts) != len(c.types)+1 {
				t.Fatalf("parts %q, want the class's %q then the bootstrap script", contentTypes(parts), c.types)
			}
			if !strings.Contains(bootstrapScript(t, parts), "/etc/eks/bootstrap.sh 'prod'") {
				t.Error("the last part does not run bootstrap.sh")
			}
			for i := range c.types {
				if got := parts[i].header.Get("Content-Type"); got != c.types[i] || parts[i].body != c.bodies[i] {
					t.Errorf("part %d = %q %q, want %q %q", i+1, got, parts[i].body, c.types[i], c.bodies[i])
				}
			}
		})
	}
	_, err := UserData(awsv1.AMIFamilyAL2, fullBootstrap(), "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\n\nunclosed")
	if err == nil || !strings.Contains(err.Error(), "spec.userData") {
		t.Errorf("malformed MIME: err = %v, want one naming spec.userData", err)
	}
}

const bottlerocketCustom = `# the class's settings
[settings]
motd = "hello"

[settings.kubernetes]
cluster-name = "theirs"
max-pods = 5
registry-qps = 20
allowed-unsafe-sysctls = ["net.core.somaxconn", 'kernel.msg*']

[settings.kubernetes.node-labels]
"team" = "theirs"
"example.com/keep" = "yes"

[settings.kubernetes.node-taints]
"theirs" = ["x:NoSchedule"]

[settings.autoscaling]
should-wait = true

[settings.kernel]
sysctl = { "user.max_user_namespaces" = "65536" }

[settings.bootstrap-commands.k8s-ephemeral]
commands = [
  ["apiclient", "ephemeral-storage", "init"], # a comment
  ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd"],
]
mode = "always"
essential = true
`

func TestUserDataBottlerocketMergesSettings(t *testing.T) {
	out := userData(t, awsv1.AMIFamilyBottlerocket, fullBootstrap(), bottlerocketCustom)
	doc, err := parseTOML(out)
	if err != nil {
		t.Fatalf("reading the TOML back: %v\n%s", err, out)
	}
	settings := doc["settings"].(map[string]any)
	// Ours override the class's same keys; the class's others stay.
	jsonEqual(t, "settings.kubernetes", settings["kubernetes"], `{
		"cluster-name": "prod", "api-server": "`+testEndpoint+`", "cluster-certificate": "`+testCAB64+`",
		"cluster-dns-ip": "10.100.0.10", "max-pods": 29, "registry-qps": 20,
		"allowed-unsafe-sysctls": ["net.core.somaxconn", "kernel.msg*"],
		"node-labels": {"team": "web", "karpenter.sh/nodepool": "default", "example.com/keep": "yes"},
		"node-taints": {"dedicated": ["web:NoSchedule"], "karpenter.sh/unregistered": [":NoExecute"]},
		"system-reserved": {"cpu": "100m", "memory": "100Mi"}, "kube-reserved": {"memory": "500Mi"},
		"eviction-hard": {"memory.available": "5%"}, "eviction-soft": {"memory.available": "10%"},
		"eviction-soft-grace-period": {"memory.available": "1m30s"}, "eviction-max-pod-grace-period": 60,
		"image-gc-high-threshold-percent": "85", "image-gc-low-threshold-percent": "80",
		"cpu-cfs-quota-enforced": false}`)
	delete(settings, "kubernetes")
	jsonEqual(t, "the rest of settings", settings, `{
		"motd": "hello", "autoscaling": {"should-wait": false},
		"kernel": {"sysctl": {"user.max_user_namespaces": "65536"}},
		"bootstrap-commands": {"k8s-ephemeral": {"mode": "always", "essential": true, "commands": [
			["apiclient", "ephemeral-storage", "init"],
			["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd"]]}}}`)
	for range 5 {
		if again := userData(t, awsv1.AMIFamilyBottlerocket, fullBootstrap(), bottlerocketCustom); again != out {
			t.Fatalf("not deterministic:\n%s\nthen\n%s", out, again)
		}
	}
}

func TestUserDataBottlerocketGolden(t *testing.T) {
	b := minimalBootstrap()
	b.MaxPods = 110
	b.Labels = map[string]string{"team": "web"}
	want := `[settings.kubernetes]
api-server = "` + testEndpoint + `"
cluster-certificate = "` + testCAB64 + `"
cluster-name = "prod"
max-pods = 110

[settings.kubernetes.node-labels]
team = "web"
`
	if got := userData(t, awsv1.AMIFamilyBottlerocket, b, ""); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestUserDataBottlerocketBadTOMLNamesUserDataAndLine(t *testing.T) {
	cases := []struct{ name, custom, want string }{
		{"float", "[settings.kubernetes]\nmax-pods = 1.5\n", "line 2"},
		{"date", "[settings]\nx = 1979-05-27\n", "line 2"},
		{"bare word", "[settings]\nx = yes\n", "line 2"},
		{"unclosed string", "[settings]\nmotd = \"hello\n", "line 2"},
		{"multi-line string", "[settings]\nmotd = \"\"\"hello\"\"\"\n", "line 2"},
		{"key twice", "[settings]\nmotd = \"a\"\nmotd = \"b\"\n", "line 3"},
		{"table twice", "[settings]\n[settings]\n", "line 2"},
		{"array of tables", "\n[[settings.x]]\n", "line 2"},
		{"unclosed array", "[settings]\nx = [\"a\",\n  \"b\"\n", "line 2"},
		{"inline table across lines", "[settings]\nx = { a = 1,\n b = 2 }\n", "line 2"},
		{"extending an inline table", "[settings]\nx = { a = 1 }\n[settings.x.b]\n", "line 3"},
		{"junk after a header", "[settings] x\n", "line 1"},
		{"no =", "[settings]\nmotd\n", "line 2"},
		{"bad escape", "[settings]\nmotd = \"\\q\"\n", "line 2"},
		{"settings not a table", "settings = 1\n", "settings must be a table"},
		{"kubernetes not a table", "[settings]\nkubernetes = \"x\"\n", "settings.kubernetes must be a table"},
		{"node-labels not a table", "[settings.kubernetes]\nnode-labels = [\"a\"]\n", "node-labels must be a table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := UserData(awsv1.AMIFamilyBottlerocket, fullBootstrap(), c.custom)
			if err == nil || !strings.Contains(err.Error(), "spec.userData") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one naming spec.userData and %q", err, c.want)
			}
		})
	}
}

func TestUserDataTOMLRoundTrip(t *testing.T) {
	const src = "top = -1_000\n" +
		"[a . \"b.c\"]\n" +
		"basic = \"tab\\there \\\"q\\\" \\u00e9\"\n" +
		"literal = 'C:\\path'\n" +
		"dotted.key = true\n" +
		"empty = []\n" +
		"mixed = [1, \"two\", [false], { x = 'y' }]\n" +
		"inline = { \"k/v\" = +7, n = {} }\n" +
		"[a.empty]\r\n"
	doc, err := parseTOML(src)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"top": -1000, "a": {"empty": {}, "b.c": {
		"basic": "tab\there \"q\" é", "literal": "C:\\path", "dotted": {"key": true}, "empty": [],
		"mixed": [1, "two", [false], {"x": "y"}], "inline": {"k/v": 7, "n": {}}}}}`
	jsonEqual(t, "parsed", doc, want)
	out, err := encodeTOML(doc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := parseTOML(out)
	if err != nil {
		t.Fatalf("reading our own TOML: %v\n%s", err, out)
	}
	jsonEqual(t, "written and read again", again, want)
}

func TestUserDataWindows(t *testing.T) {
	boot := `[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"` + "\n"
	const redirect = " 3>&1 4>&1 5>&1 6>&1\n</powershell>\n"
	odd := minimalBootstrap()
	odd.ClusterName = "it's"
	cases := []struct {
		name, custom string
		b            Bootstrap
		want         string
	}{
		{"every setting after the class's commands", "Write-Host 'hello'\n", fullBootstrap(), "<powershell>\nWrite-Host 'hello'\n" + boot +
			"& $EKSBootstrapScriptFile -EKSClusterName 'prod' -APIServerEndpoint '" + testEndpoint + "' -Base64ClusterCA '" + testCAB64 +
			"' -KubeletExtraArgs '" + fullKubeletArgs + "' -DNSClusterIP '10.100.0.10'" + redirect},
		{"quotes doubled", "", odd, "<powershell>\n" + boot +
			"& $EKSBootstrapScriptFile -EKSClusterName 'it''s' -APIServerEndpoint '" + testEndpoint + "' -Base64ClusterCA '" + testCAB64 + "'" + redirect},
		{"the class's own powershell tags", "<powershell>\nWrite-Host 'hello'\n</powershell>\n", odd, "<powershell>\nWrite-Host 'hello'\n" + boot +
			"& $EKSBootstrapScriptFile -EKSClusterName 'it''s' -APIServerEndpoint '" + testEndpoint + "' -Base64ClusterCA '" + testCAB64 + "'" + redirect},
	}
	for _, family := range []string{awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
		for _, c := range cases {
			t.Run(family+" "+c.name, func(t *testing.T) {
				if got := userData(t, family, c.b, c.custom); got != c.want {
					t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
				}
			})
		}
	}
}

func TestUserDataCustomIsTheClasssAlone(t *testing.T) {
	for _, custom := range []string{"", "#!/bin/bash\necho mine\n", "MIME-Version: 1.0\nnot even valid"} {
		if got := userData(t, awsv1.AMIFamilyCustom, fullBootstrap(), custom); got != custom {
			t.Errorf("got %q, want the class's user data %q as written", got, custom)
		}
	}
}

func TestUserDataFamilies(t *testing.T) {
	if _, err := UserData("Ubuntu", fullBootstrap(), ""); err == nil || !strings.Contains(err.Error(), "Ubuntu") {
		t.Errorf("unknown family: err = %v, want one naming it", err)
	}
	if got, want := userData(t, "", fullBootstrap(), ""), userData(t, awsv1.AMIFamilyAL2023, fullBootstrap(), ""); got != want {
		t.Error("no family is not AL2023, the default alias")
	}
}
