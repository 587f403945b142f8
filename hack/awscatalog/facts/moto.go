// Package facts reads the facts of the built-in AWS instance-type catalog
// from files on this machine, moto's copy of EC2's DescribeInstanceTypes and
// offerings data and the shared on-demand price table, and turns them into
// the data file of internal/cloudprovider/aws/catalog. The generator command
// and that package's freshness test both call it.
package facts

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Sources are the inputs of one generation.
type Sources struct {
	// MotoDir is the moto Python package's folder, MotoVersion its version.
	MotoDir     string
	MotoVersion string
	// ZoneIDs maps region -> zone -> zone ID, as moto defines its zones.
	ZoneIDs map[string]map[string]string
	// PricesFile is the on-demand price table (compat/aws/ondemand-prices.json).
	PricesFile string
}

// motoProbe prints moto's folder, version and zone IDs as JSON. It loads
// only the module that defines the zones, not the whole of moto's EC2 mock.
const motoProbe = `
import importlib.metadata, importlib.util, json, os, sys
spec = importlib.util.find_spec("moto")
if spec is None or not spec.submodule_search_locations:
    sys.exit("the Python package moto is not installed")
root = list(spec.submodule_search_locations)[0]
path = os.path.join(root, "ec2", "models", "availability_zones_and_regions.py")
zspec = importlib.util.spec_from_file_location("nodewright_moto_zones", path)
module = importlib.util.module_from_spec(zspec)
zspec.loader.exec_module(module)
zones = {region: {z.name: z.zone_id for z in zs} for region, zs in module.RegionsAndZonesBackend.zones.items()}
json.dump({"dir": root, "version": importlib.metadata.version("moto"), "zones": zones}, sys.stdout)
`

// probeMoto runs python3 to find moto.
func probeMoto() (dir, version string, zones map[string]map[string]string, err error) {
	cmd := exec.Command("python3", "-c", motoProbe)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", nil, fmt.Errorf("finding moto (the Python package, 5.2.1, whose EC2 data the AWS catalog is made from; pip install moto==5.2.1) with python3: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var probe struct {
		Dir     string                       `json:"dir"`
		Version string                       `json:"version"`
		Zones   map[string]map[string]string `json:"zones"`
	}
	if err := json.Unmarshal(out, &probe); err != nil {
		return "", "", nil, fmt.Errorf("reading what python3 said about moto: %w", err)
	}
	return probe.Dir, probe.Version, probe.Zones, nil
}

type ec2Offering struct {
	InstanceType string
	Location     string
}

// readGzipJSON decodes a gzipped JSON file into v.
func readGzipJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.NewDecoder(z).Decode(v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// readTypes reads moto's DescribeInstanceTypes records, which have the
// field names of EC2's API and so decode into the SDK's type.
func readTypes(motoDir string) (map[string]ec2types.InstanceTypeInfo, error) {
	types := map[string]ec2types.InstanceTypeInfo{}
	err := readGzipJSON(filepath.Join(motoDir, "ec2", "resources", "instance_types.json.gz"), &types)
	return types, err
}

// readOfferings reads which types each zone of each region offers: region ->
// zone -> types.
func readOfferings(motoDir string) (map[string]map[string][]string, error) {
	dir := filepath.Join(motoDir, "ec2", "resources", "instance_type_offerings", "availability-zone")
	files, err := filepath.Glob(filepath.Join(dir, "*.json.gz"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no offerings in %s", dir)
	}
	out := map[string]map[string][]string{}
	for _, file := range files {
		region := strings.TrimSuffix(filepath.Base(file), ".json.gz")
		var offerings []ec2Offering
		if err := readGzipJSON(file, &offerings); err != nil {
			return nil, err
		}
		zones := map[string][]string{}
		for _, o := range offerings {
			zones[o.Location] = append(zones[o.Location], o.InstanceType)
		}
		out[region] = zones
	}
	return out, nil
}
