package main

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nodewright/nodewright/config/deploy"
	"github.com/nodewright/nodewright/internal/image"
)

// TestDeploymentRunsTheControllerAsBuilt checks the Deployment manifest
// against this binary and image: its arguments are flags `nodewright
// controller` accepts, its probes and ports are where those flags put them,
// and it runs the image `make image` builds, as the image's user.
func TestDeploymentRunsTheControllerAsBuilt(t *testing.T) {
	var d *appsv1.Deployment
	for _, doc := range strings.Split(string(deploy.Manifest), "\n---\n") {
		var probe appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(doc), &probe); err == nil && probe.Kind == "Deployment" {
			d = &probe
		}
	}
	if d == nil {
		t.Fatal("no Deployment in config/deploy/nodewright.yaml that decodes strictly")
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want the controller alone", len(d.Spec.Template.Spec.Containers))
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	if ctr.Image != image.DefaultTag {
		t.Errorf("image %q, want %q, the tag `make image` gives", ctr.Image, image.DefaultTag)
	}
	if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil ||
		fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsGroup) != image.User {
		t.Errorf("pod security context %+v does not run as the image's user %s", sc, image.User)
	}
	if len(ctr.Args) == 0 || ctr.Args[0] != "controller" {
		t.Fatalf("args %v do not start with the controller command", ctr.Args)
	}
	cmd := controllerCommand()
	if err := cmd.ParseFlags(ctr.Args[1:]); err != nil {
		t.Fatalf("`nodewright controller` refuses the Deployment's args %v: %v", ctr.Args[1:], err)
	}
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for flag, port := range map[string]string{"metrics-bind-address": "metrics", "health-probe-bind-address": "probes"} {
		addr := cmd.Flags().Lookup(flag).Value.String()
		if want := fmt.Sprintf(":%d", ports[port]); addr != want {
			t.Errorf("--%s is %q but the container port %q is %d", flag, addr, port, ports[port])
		}
	}
	for what, probe := range map[string]string{"liveness": ctr.LivenessProbe.HTTPGet.Port.String(), "readiness": ctr.ReadinessProbe.HTTPGet.Port.String()} {
		if probe != "probes" {
			t.Errorf("the %s probe goes to port %q, not the probes port", what, probe)
		}
	}
	if ns := cmd.Flags().Lookup("namespace").Value.String(); ns != d.Namespace {
		t.Errorf("--namespace %q, but the Deployment runs in %q: the leader lease would be looked for elsewhere", ns, d.Namespace)
	}
}
