// Command imagebuild writes the udnkit manager's container image as a
// tarball without a container engine (`make image`): one layer holding the
// statically linked manager binary at /udnkit on an empty base, run as the
// non-root user 65532, tagged with the reference the Helm chart deploys by
// default. `docker load`, `podman load`, `skopeo copy docker-archive:...` or
// `crane push` take the tarball.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
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

func main() {
	binary := flag.String("binary", "", "the statically linked manager binary")
	ref := flag.String("ref", "", "the image reference, e.g. ghcr.io/udnkit/udnkit:0.1.0 (the chart's image.repository and appVersion)")
	out := flag.String("o", "", "the tarball to write")
	flag.Parse()
	if err := build(*binary, *ref, *out); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// build writes the image; the layer's timestamps are fixed, so the same
// binary always gives the same image digest.
func build(binary, ref, out string) error {
	if binary == "" || ref == "" || out == "" {
		return fmt.Errorf("-binary, -ref and -o are required")
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("-ref %q: %w", ref, err)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(data) },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg := cf.Config
	cfg.Entrypoint = []string{"/udnkit"}
	cfg.User = "65532:65532"
	cfg.WorkingDir = "/"
	cfg.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/udnkit/udnkit", "org.opencontainers.image.title": "udnkit"}
	if img, err = mutate.Config(img, cfg); err != nil {
		return err
	}
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{Architecture: "amd64", OS: "linux", Config: cfg, RootFS: cf.RootFS,
		Created: v1.Time{Time: time.Unix(0, 0).UTC()}})
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, tag, img)
}

func layerTar(binary []byte) (io.ReadCloser, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, h := range []*tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 01777, ModTime: epoch},
		{Name: "udnkit", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(binary)), ModTime: epoch},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(binary); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}
