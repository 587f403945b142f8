// Package image builds nodewright's container image without a container
// runtime or a base image from a registry: one layer holding the static
// nodewright binary, run as an unprivileged user. The image is written as a
// tarball that `docker load` and `podman load` read, and that registries
// take through `crane push` or `skopeo copy docker-archive:...`.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BinaryPath is where the binary sits in the image; it is the entrypoint.
	BinaryPath = "/nodewright"
	// User is the numeric user and group the controller runs as: no passwd
	// file is needed, and the Deployment's runAsNonRoot can check it.
	User = "65532:65532"
	// DefaultTag is what `make image` tags the image, and what the
	// Deployment manifest (config/deploy) runs.
	DefaultTag = "nodewright:dev"
)

// Spec says what goes into the image.
type Spec struct {
	// Binary is the nodewright executable, built static (CGO_ENABLED=0) for
	// the image's platform.
	Binary []byte
	// OS and Architecture of the binary, such as linux and amd64.
	OS, Architecture string
	// Created is recorded in the image and on its files; a fixed time keeps
	// the image's digest the same for the same binary.
	Created time.Time
}

// Build returns the image: the binary as the only file, the entrypoint
// `nodewright controller`.
func Build(s Spec) (v1.Image, error) {
	if len(s.Binary) == 0 {
		return nil, fmt.Errorf("image: no binary to put in it")
	}
	if s.OS == "" || s.Architecture == "" {
		return nil, fmt.Errorf("image: the binary's OS and architecture are needed (such as linux, amd64)")
	}
	layerTar, err := binaryLayer(s.Binary, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, fmt.Errorf("image: appending the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = s.OS, s.Architecture
	cfg.Created = v1.Time{Time: s.Created}
	cfg.Config.Entrypoint = []string{BinaryPath}
	cfg.Config.Cmd = []string{"controller"}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":  "nodewright",
		"org.opencontainers.image.source": "https://github.com/nodewright/nodewright",
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image: setting the config: %w", err)
	}
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// binaryLayer is a tar holding the binary at BinaryPath, executable by all.
func binaryLayer(bin []byte, mod time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: BinaryPath[1:], Mode: 0o555, Size: int64(len(bin)), ModTime: mod, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("image: layer header: %w", err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteTarball writes img to path as a `docker load` tarball tagged ref
// (such as nodewright:dev).
func WriteTarball(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image: tag %q: %w", ref, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if err := tarball.Write(tag, img, f); err != nil {
		f.Close()
		return fmt.Errorf("image: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("image: writing %s: %w", path, err)
	}
	return nil
}
