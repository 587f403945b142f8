package aws

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/netip"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// Bootstrap is what a node needs to join the cluster, besides the class's own user data.
type Bootstrap struct {
	ClusterName     string
	ClusterEndpoint string                      // https://...
	CABundle        []byte                      // PEM of the cluster CA; may be empty
	ClusterCIDR     string                      // the service CIDR, e.g. 10.100.0.0/16; may be empty (then omitted where the family allows)
	Labels          map[string]string           // node labels to register with
	Taints          []corev1.Taint              // spec.taints + spec.startupTaints of the NodeClaim
	Kubelet         *awsv1.KubeletConfiguration // the class's spec.kubelet, may be nil
	MaxPods         int32                       // 0: not set (let the AMI decide)
}

// UserData returns the user data (plain text, not base64) for an instance of
// the AMI family (awsv1.AMIFamilyAL2023, AMIFamilyAL2, AMIFamilyBottlerocket,
// AMIFamilyWindows2019/2022/2025, AMIFamilyCustom) with the class's
// spec.userData (custom, may be ""), merged as Karpenter merges it.
//
// An empty family is AL2023, the default alias, as familyOf has it; a family
// the API does not know is an error rather than a guess, since user data for
// the wrong bootstrap leaves an instance that never joins.
func UserData(family string, b Bootstrap, custom string) (string, error) {
	switch family {
	case awsv1.AMIFamilyAL2023, "":
		return nodeadmUserData(b, custom)
	case awsv1.AMIFamilyAL2:
		return eksBootstrapUserData(b, custom)
	case awsv1.AMIFamilyBottlerocket:
		return bottlerocketUserData(b, custom)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return windowsUserData(b, custom), nil
	case awsv1.AMIFamilyCustom:
		return custom, nil
	}
	return "", fmt.Errorf("user data: unknown AMI family %q", family)
}

// maxPods is the kubelet's max pods: the class's own value wins, as the
// caller's per-instance-type figure is only the default Karpenter fills in
// when the class says nothing.
func (b Bootstrap) maxPods() (int32, bool) {
	if b.Kubelet != nil && b.Kubelet.MaxPods != nil {
		return *b.Kubelet.MaxPods, true
	}
	return b.MaxPods, b.MaxPods > 0
}

func (b Bootstrap) clusterDNS() []string {
	if b.Kubelet == nil {
		return nil
	}
	return b.Kubelet.ClusterDNS
}

func (b Bootstrap) caBase64() string { return base64.StdEncoding.EncodeToString(b.CABundle) }

// ipv6 tells whether the cluster serves IPv6, from its DNS address or, when
// that is unknown, its service CIDR.
func (b Bootstrap) ipv6() bool {
	if dns := b.clusterDNS(); len(dns) > 0 {
		a, err := netip.ParseAddr(dns[0])
		return err == nil && a.Is6()
	}
	p, err := netip.ParsePrefix(b.ClusterCIDR)
	return err == nil && p.Addr().Is6()
}

// joinSorted is k<sep>v,... in key order.
func joinSorted(m map[string]string, sep string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, k+sep+m[k])
	}
	return strings.Join(kv, ",")
}

// kubeletArgs are the kubelet flags the AL2 and Windows bootstrap scripts
// pass on, in Karpenter's order. Map-valued flags are sorted, where
// Karpenter leaves them in map order, so that equal classes give equal
// launch templates.
func kubeletArgs(b Bootstrap) []string {
	var args []string
	if len(b.Labels) > 0 {
		args = append(args, fmt.Sprintf("--node-labels=%q", joinSorted(b.Labels, "=")))
	}
	if len(b.Taints) > 0 {
		taints := make([]string, len(b.Taints))
		for i := range b.Taints {
			taints[i] = b.Taints[i].ToString()
		}
		args = append(args, fmt.Sprintf("--register-with-taints=%q", strings.Join(taints, ",")))
	}
	if n, ok := b.maxPods(); ok {
		args = append(args, fmt.Sprintf("--max-pods=%d", n))
	}
	k := b.Kubelet
	if k == nil {
		return args
	}
	if k.PodsPerCore != nil {
		args = append(args, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	grace := map[string]string{}
	for s, d := range k.EvictionSoftGracePeriod {
		grace[s] = d.Duration.String()
	}
	for _, m := range []struct {
		flag, sep string
		values    map[string]string
	}{
		{"--system-reserved", "=", k.SystemReserved},
		{"--kube-reserved", "=", k.KubeReserved},
		{"--eviction-hard", "<", k.EvictionHard},
		{"--eviction-soft", "<", k.EvictionSoft},
		{"--eviction-soft-grace-period", "=", grace},
	} {
		if len(m.values) == 0 {
			continue
		}
		args = append(args, fmt.Sprintf("%s=%q", m.flag, joinSorted(m.values, m.sep)))
	}
	for _, f := range []struct {
		flag  string
		value *int32
	}{
		{"--eviction-max-pod-grace-period", k.EvictionMaxPodGracePeriod},
		{"--image-gc-high-threshold", k.ImageGCHighThresholdPercent},
		{"--image-gc-low-threshold", k.ImageGCLowThresholdPercent},
	} {
		if f.value != nil {
			args = append(args, fmt.Sprintf("%s=%d", f.flag, *f.value))
		}
	}
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return args
}

// shellQuote quotes s as one bash word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// powershellQuote quotes s as a PowerShell verbatim string.
func powershellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// The content types of the MIME parts cloud-init and nodeadm read.
const (
	contentTypeShell      = `text/x-shellscript; charset="us-ascii"`
	contentTypeNodeConfig = "application/node.eks.aws"
)

// nodeConfig is the part of nodeadm's NodeConfig (node.eks.aws/v1alpha1)
// that joining a cluster needs.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster struct {
		Name                 string `json:"name"`
		APIServerEndpoint    string `json:"apiServerEndpoint"`
		CertificateAuthority []byte `json:"certificateAuthority,omitempty"`
		CIDR                 string `json:"cidr,omitempty"`
	} `json:"cluster"`
	Kubelet *nodeConfigKubelet `json:"kubelet,omitempty"`
}

type nodeConfigKubelet struct {
	Config map[string]json.RawMessage `json:"config,omitempty"`
	Flags  []string                   `json:"flags,omitempty"`
}

// nodeadmUserData is AL2023's: the class's parts, then our NodeConfig, which
// nodeadm merges over theirs.
func nodeadmUserData(b Bootstrap, custom string) (string, error) {
	parts, err := customParts(custom, true)
	if err != nil {
		return "", err
	}
	cfg := nodeConfig{APIVersion: "node.eks.aws/v1alpha1", Kind: "NodeConfig"}
	cfg.Spec.Cluster.Name = b.ClusterName
	cfg.Spec.Cluster.APIServerEndpoint = b.ClusterEndpoint
	cfg.Spec.Cluster.CertificateAuthority = b.CABundle
	// nodeadm refuses a merged NodeConfig without a cidr (or a CA); when we
	// do not know it, only the class's own NodeConfig part can give it.
	cfg.Spec.Cluster.CIDR = b.ClusterCIDR
	kubelet, err := nodeadmKubelet(b)
	if err != nil {
		return "", err
	}
	cfg.Spec.Kubelet = kubelet
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("user data: writing the NodeConfig: %w", err)
	}
	parts = append(parts, mimePart{
		header: textproto.MIMEHeader{"Content-Type": {contentTypeNodeConfig}},
		body:   "# nodewright's NodeConfig\n" + string(out),
	})
	return writeMIME(parts), nil
}

// nodeadmKubelet is spec.kubelet of our NodeConfig. The class's kubelet
// fields carry the kubelet configuration's own names, so, as Karpenter does,
// they go into kubelet.config as written.
func nodeadmKubelet(b Bootstrap) (*nodeConfigKubelet, error) {
	var k awsv1.KubeletConfiguration
	if b.Kubelet != nil {
		k = *b.Kubelet
	}
	if n, ok := b.maxPods(); ok {
		k.MaxPods = &n
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("user data: writing the kubelet configuration: %w", err)
	}
	config := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, fmt.Errorf("user data: writing the kubelet configuration: %w", err)
	}
	if len(b.Taints) > 0 {
		taints, err := json.Marshal(b.Taints)
		if err != nil {
			return nil, fmt.Errorf("user data: writing the taints: %w", err)
		}
		config["registerWithTaints"] = taints
	}
	kubelet := &nodeConfigKubelet{Config: config}
	if len(b.Labels) > 0 {
		kubelet.Flags = []string{"--node-labels=" + joinSorted(b.Labels, "=")}
	}
	if len(kubelet.Config) == 0 && len(kubelet.Flags) == 0 {
		return nil, nil
	}
	return kubelet, nil
}

// eksBootstrapUserData is AL2's: the class's parts, then a script running
// the EKS AMI's bootstrap.sh.
func eksBootstrapUserData(b Bootstrap, custom string) (string, error) {
	parts, err := customParts(custom, false)
	if err != nil {
		return "", err
	}
	var s strings.Builder
	s.WriteString("#!/bin/bash -xe\n")
	s.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	// bootstrap.sh reads each option and its value as two words: no "=".
	fmt.Fprintf(&s, "/etc/eks/bootstrap.sh %s --apiserver-endpoint %s", shellQuote(b.ClusterName), shellQuote(b.ClusterEndpoint))
	if len(b.CABundle) > 0 {
		fmt.Fprintf(&s, " --b64-cluster-ca %s", shellQuote(b.caBase64()))
	}
	if b.ipv6() {
		s.WriteString(" \\\n--ip-family ipv6")
		// Given the CA, bootstrap.sh skips DescribeCluster and would take
		// the cluster for IPv4 and guess an IPv4 DNS address without this.
		if p, err := netip.ParsePrefix(b.ClusterCIDR); err == nil && p.Addr().Is6() {
			fmt.Fprintf(&s, " \\\n--service-ipv6-cidr %s", shellQuote(b.ClusterCIDR))
		}
	}
	if dns := b.clusterDNS(); len(dns) > 0 {
		fmt.Fprintf(&s, " \\\n--dns-cluster-ip %s", shellQuote(dns[0]))
	}
	if _, ok := b.maxPods(); ok {
		// Our --max-pods stands; bootstrap.sh would otherwise add its own
		// from the AMI's ENI table.
		s.WriteString(" \\\n--use-max-pods false")
	}
	if args := kubeletArgs(b); len(args) > 0 {
		fmt.Fprintf(&s, " \\\n--kubelet-extra-args %s", shellQuote(strings.Join(args, " ")))
	}
	s.WriteString("\n")
	parts = append(parts, mimePart{header: textproto.MIMEHeader{"Content-Type": {contentTypeShell}}, body: s.String()})
	return writeMIME(parts), nil
}

// windowsUserData is the Windows families': one PowerShell block, the
// class's commands first, then the EKS AMI's Start-EKSBootstrap.ps1.
func windowsUserData(b Bootstrap, custom string) string {
	var s strings.Builder
	s.WriteString("<powershell>\n")
	// A class that wrapped its commands in <powershell> itself would end our
	// block early; its commands belong inside ours.
	c := strings.TrimSpace(custom)
	if strings.HasPrefix(c, "<powershell>") && strings.HasSuffix(c, "</powershell>") {
		c = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(c, "<powershell>"), "</powershell>"))
	}
	if c != "" {
		s.WriteString(c + "\n")
	}
	s.WriteString(`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"` + "\n")
	fmt.Fprintf(&s, "& $EKSBootstrapScriptFile -EKSClusterName %s -APIServerEndpoint %s",
		powershellQuote(b.ClusterName), powershellQuote(b.ClusterEndpoint))
	if len(b.CABundle) > 0 {
		fmt.Fprintf(&s, " -Base64ClusterCA %s", powershellQuote(b.caBase64()))
	}
	if args := kubeletArgs(b); len(args) > 0 {
		fmt.Fprintf(&s, " -KubeletExtraArgs %s", powershellQuote(strings.Join(args, " ")))
	}
	if dns := b.clusterDNS(); len(dns) > 0 {
		fmt.Fprintf(&s, " -DNSClusterIP %s", powershellQuote(dns[0]))
	}
	// The script's warnings and progress go to the EC2Launch log too.
	s.WriteString(" 3>&1 4>&1 5>&1 6>&1\n</powershell>\n")
	return s.String()
}

// bottlerocketUserData is Bottlerocket's: the class's TOML with our
// settings.kubernetes values written over theirs.
func bottlerocketUserData(b Bootstrap, custom string) (string, error) {
	doc, err := parseTOML(custom)
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	settings, err := tomlSubtable(doc, "settings", "settings")
	if err != nil {
		return "", err
	}
	k8s, err := tomlSubtable(settings, "kubernetes", "settings.kubernetes")
	if err != nil {
		return "", err
	}
	// Our nodes join no Auto Scaling group: waiting for one would hold the
	// kubelet back for good.
	if as, ok := settings["autoscaling"].(map[string]any); ok {
		if _, set := as["should-wait"]; set {
			as["should-wait"] = false
		}
	}
	k8s["cluster-name"] = b.ClusterName
	k8s["api-server"] = b.ClusterEndpoint
	if len(b.CABundle) > 0 {
		k8s["cluster-certificate"] = b.caBase64()
	}
	switch dns := b.clusterDNS(); len(dns) {
	case 0:
	case 1:
		k8s["cluster-dns-ip"] = dns[0]
	default:
		k8s["cluster-dns-ip"] = tomlStrings(dns)
	}
	// The class's labels stay unless ours name the same key.
	labels, err := tomlSubtable(k8s, "node-labels", "settings.kubernetes.node-labels")
	if err != nil {
		return "", err
	}
	for k, v := range b.Labels {
		labels[k] = v
	}
	if len(labels) == 0 {
		delete(k8s, "node-labels")
	}
	// Taints are the NodeClaim's alone, as Karpenter has them: a node with a
	// taint the scheduler did not plan for would not take its pods.
	delete(k8s, "node-taints")
	if len(b.Taints) > 0 {
		taints := map[string]any{}
		for _, t := range b.Taints {
			v, _ := taints[t.Key].([]any)
			taints[t.Key] = append(v, t.Value+":"+string(t.Effect))
		}
		k8s["node-taints"] = taints
	}
	if n, ok := b.maxPods(); ok {
		k8s["max-pods"] = int64(n)
	}
	bottlerocketKubelet(k8s, b.Kubelet)
	return encodeTOML(doc)
}

// bottlerocketKubelet writes the class's kubelet settings under
// Bottlerocket's names. Bottlerocket has no podsPerCore setting, so that
// one is left out, as Karpenter leaves it out.
func bottlerocketKubelet(k8s map[string]any, k *awsv1.KubeletConfiguration) {
	if k == nil {
		return
	}
	grace := map[string]string{}
	for s, d := range k.EvictionSoftGracePeriod {
		grace[s] = d.Duration.String()
	}
	for key, m := range map[string]map[string]string{
		"system-reserved":            k.SystemReserved,
		"kube-reserved":              k.KubeReserved,
		"eviction-hard":              k.EvictionHard,
		"eviction-soft":              k.EvictionSoft,
		"eviction-soft-grace-period": grace,
	} {
		if len(m) == 0 {
			continue
		}
		t := map[string]any{}
		for name, v := range m {
			t[name] = v
		}
		k8s[key] = t
	}
	if k.EvictionMaxPodGracePeriod != nil {
		k8s["eviction-max-pod-grace-period"] = int64(*k.EvictionMaxPodGracePeriod)
	}
	// Strings, as Karpenter writes them: Bottlerocket before 1.14 takes no
	// integer here.
	if k.ImageGCHighThresholdPercent != nil {
		k8s["image-gc-high-threshold-percent"] = strconv.Itoa(int(*k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		k8s["image-gc-low-threshold-percent"] = strconv.Itoa(int(*k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		k8s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}
}

// tomlSubtable returns t[key], made if missing; path names it in errors.
func tomlSubtable(t map[string]any, key, path string) (map[string]any, error) {
	switch v := t[key].(type) {
	case nil:
		m := map[string]any{}
		t[key] = m
		return m, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("spec.userData: %s must be a table", path)
}

func tomlStrings(s []string) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}

// mimePart is one part of a MIME multi-part document.
type mimePart struct {
	header textproto.MIMEHeader
	body   string
}

// customParts are the class's user data as MIME parts: its own parts when
// it is a MIME multi-part document, else one part. For AL2023 (nodeConfig)
// that part is a NodeConfig unless it is a script, and every NodeConfig
// part must be one; for AL2 it is a script, as Karpenter has it.
func customParts(custom string, nodeConfig bool) ([]mimePart, error) {
	trimmed := strings.TrimSpace(custom)
	if trimmed == "" {
		return nil, nil
	}
	if !strings.HasPrefix(trimmed, "MIME-Version:") && !strings.HasPrefix(trimmed, "Content-Type:") {
		ct := contentTypeShell
		if nodeConfig && !strings.HasPrefix(trimmed, "#!") && looksLikeNodeConfig(custom) {
			if err := checkNodeConfig(custom); err != nil {
				if !strings.Contains(custom, "NodeConfig") {
					err = fmt.Errorf("%w; a script must start with #!", err)
				}
				return nil, fmt.Errorf("spec.userData: %w", err)
			}
			ct = contentTypeNodeConfig
		}
		return []mimePart{{header: textproto.MIMEHeader{"Content-Type": {ct}}, body: custom}}, nil
	}
	parts, err := parseMIME(strings.TrimLeft(custom, " \t\r\n"))
	if err != nil {
		return nil, fmt.Errorf("spec.userData: malformed MIME multi-part document: %w", err)
	}
	for i, p := range parts {
		if mt, _, _ := mime.ParseMediaType(p.header.Get("Content-Type")); nodeConfig && mt == contentTypeNodeConfig {
			if err := checkNodeConfig(p.body); err != nil {
				return nil, fmt.Errorf("spec.userData: MIME part %d: %w", i+1, err)
			}
		}
	}
	return parts, nil
}

// looksLikeNodeConfig tells a NodeConfig, even a broken one, from a script:
// what parses as a YAML mapping or names nodeadm's API. Karpenter takes only
// the first for YAML, so a misspelt NodeConfig would go out as a script.
func looksLikeNodeConfig(s string) bool {
	if strings.Contains(s, "node.eks.aws/") || strings.Contains(s, "NodeConfig") {
		return true
	}
	return yaml.Unmarshal([]byte(s), &map[string]any{}) == nil
}

// checkNodeConfig checks that s is YAML of a node.eks.aws NodeConfig, which
// nodeadm would otherwise reject only on the instance.
func checkNodeConfig(s string) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal([]byte(s), &head); err != nil {
		return fmt.Errorf("not a valid NodeConfig: %w", err)
	}
	if !strings.HasPrefix(head.APIVersion, "node.eks.aws/") || head.Kind != "NodeConfig" {
		return fmt.Errorf("not a NodeConfig: apiVersion %q, kind %q (want node.eks.aws/v1alpha1, NodeConfig)", head.APIVersion, head.Kind)
	}
	return nil
}

// parseMIME reads the parts of a MIME multi-part document.
func parseMIME(s string) ([]mimePart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(s))
	if err != nil {
		return nil, fmt.Errorf("reading the headers: %w", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("Content-Type: %w", err)
	}
	if !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("Content-Type %q is not multipart with a boundary", mt)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var parts []mimePart
	for {
		p, err := r.NextPart()
		// Only the bare io.EOF is the closing boundary: a document that
		// ends before it gets "multipart: NextPart: EOF", which wraps it.
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", len(parts)+1, err)
		}
		parts = append(parts, mimePart{header: p.Header, body: string(body)})
	}
}

// writeMIME writes parts as one multi-part document with "\n" line ends,
// as Karpenter does, and "//" as the boundary unless a part contains it.
func writeMIME(parts []mimePart) string {
	boundary := "//"
	for slices.ContainsFunc(parts, func(p mimePart) bool { return strings.Contains(p.body, "--"+boundary) }) {
		boundary += "/"
	}
	var s strings.Builder
	s.WriteString("MIME-Version: 1.0\n")
	fmt.Fprintf(&s, "Content-Type: multipart/mixed; boundary=%q\n\n", boundary)
	for _, p := range parts {
		fmt.Fprintf(&s, "--%s\n", boundary)
		for _, k := range slices.Sorted(maps.Keys(p.header)) {
			for _, v := range p.header[k] {
				fmt.Fprintf(&s, "%s: %s\n", k, v)
			}
		}
		fmt.Fprintf(&s, "\n%s\n", p.body)
	}
	fmt.Fprintf(&s, "--%s--\n", boundary)
	return strings.ReplaceAll(s.String(), "\r", "")
}
