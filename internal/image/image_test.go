package image

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImageRunsTheController builds the real binary static, puts it in an
// image, writes the tarball, reads it back as `docker load` would, and runs
// the binary it holds.
func TestImageRunsTheController(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "nodewright")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../../cmd/nodewright")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nodewright: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Build(Spec{Binary: data, OS: "linux", Architecture: runtime.GOARCH, Created: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "image.tar")
	if err := WriteTarball(path, "nodewright:dev", img); err != nil {
		t.Fatal(err)
	}

	// The tarball names its tag where `docker load` looks for it.
	var manifest []struct{ RepoTags []string }
	if err := json.Unmarshal(fileInTar(t, path, "manifest.json"), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != "index.docker.io/library/nodewright:dev" && manifest[0].RepoTags[0] != "nodewright:dev" {
		t.Fatalf("manifest.json RepoTags %+v, want nodewright:dev", manifest)
	}

	back, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(append(cfg.Config.Entrypoint, cfg.Config.Cmd...), " "); got != BinaryPath+" controller" {
		t.Errorf("entrypoint and command %q, want %q", got, BinaryPath+" controller")
	}
	if cfg.Config.User != User || cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("user %q os %q arch %q, want %q linux %s", cfg.Config.User, cfg.OS, cfg.Architecture, User, runtime.GOARCH)
	}

	// The image's only file is the binary; it runs.
	fs := tar.NewReader(mutate.Extract(back))
	var files []string
	extracted := filepath.Join(dir, "extracted")
	for {
		h, err := fs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, h.Name)
		if "/"+h.Name == BinaryPath {
			if h.Mode&0o111 == 0 {
				t.Errorf("%s has mode %o: not executable", BinaryPath, h.Mode)
			}
			b, err := io.ReadAll(fs)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(extracted, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(files) != 1 {
		t.Fatalf("image files %v, want only %s", files, BinaryPath)
	}
	out, err := exec.Command(extracted, "controller", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("the image's binary: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--leader-elect") {
		t.Errorf("the image's `nodewright controller --help` does not list --leader-elect:\n%s", out)
	}

	// The same binary gives the same image.
	again, err := Build(Spec{Binary: data, OS: "linux", Architecture: runtime.GOARCH, Created: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of one binary have digests %s and %s", d1, d2)
	}
}

func TestBuildRefusesWhatItCannotLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no binary", Spec{OS: "linux", Architecture: "amd64"}, "no binary"},
		{"no platform", Spec{Binary: []byte("x")}, "OS and architecture"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func fileInTar(t *testing.T, path, name string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in %s: %v", name, path, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}
