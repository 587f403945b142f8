package awscatalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

// DataFile is the name of the generated file in this package's folder.
const DataFile = "catalog.json"

//go:embed catalog.json
var raw []byte

// Data is the generated file: every instance type's facts once, then each
// region's zones and the types each zone offers.
type Data struct {
	// Source names the facts' origin, including the moto version.
	Source string `json:"source"`
	// PriceSource names the on-demand price table.
	PriceSource string       `json:"priceSource"`
	Types       []TypeFacts  `json:"types"`
	Regions     []RegionData `json:"regions"`

	indexOnce sync.Once
	byName    map[string]int
}

// TypeFacts is what EC2 says about one instance type, in the units
// Karpenter's labels use.
type TypeFacts struct {
	Name      string `json:"name"`
	VCPUs     int64  `json:"vcpus"`
	MemoryMiB int64  `json:"memoryMiB"`
	Arch      string `json:"arch"` // amd64 or arm64
	// CPUManufacturer is as EC2 writes it ("Intel", "AWS").
	CPUManufacturer string `json:"cpuManufacturer"`
	// ClockMHz is the sustained clock speed, 0 when EC2 gives none.
	ClockMHz int64 `json:"clockMHz"`
	// Hypervisor is "nitro" or "xen", "" for bare metal.
	Hypervisor string `json:"hypervisor,omitempty"`
	// BareMetal types run without a hypervisor.
	BareMetal           bool `json:"bareMetal,omitempty"`
	EncryptionInTransit bool `json:"encryptionInTransit,omitempty"`
	// EBSBandwidthMbps is the maximum EBS bandwidth of types that are
	// EBS-optimized by default, else 0.
	EBSBandwidthMbps int64 `json:"ebsBandwidthMbps,omitempty"`
	// NetworkBandwidthMbps is the baseline bandwidth summed over network
	// cards, 0 where EC2 only says "Moderate", "High" and the like.
	NetworkBandwidthMbps int64 `json:"networkBandwidthMbps,omitempty"`
	// LocalNVMeGB is the NVMe instance store as EC2 counts it (TotalSizeInGB).
	LocalNVMeGB int64 `json:"localNVMeGB,omitempty"`
	// ENIs on the default network card and IPv4 addresses per ENI.
	ENIs       int64 `json:"enis"`
	IPv4PerENI int64 `json:"ipv4PerENI"`
	// EFAs is the most Elastic Fabric Adapter interfaces, 0 for none.
	EFAs                  int64    `json:"efas,omitempty"`
	GPUs                  []Device `json:"gpus,omitempty"`
	NeuronDevices         []Device `json:"neuronDevices,omitempty"`
	InferenceAccelerators []Device `json:"inferenceAccelerators,omitempty"`
	// Spot says whether the type can be bought as spot.
	Spot bool `json:"spot,omitempty"`
	// OnDemandPrice is USD per hour.
	OnDemandPrice float64 `json:"onDemandPrice"`
}

// Device is one kind of GPU or accelerator on a type.
type Device struct {
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
	Count        int64  `json:"count"`
	MemoryMiB    int64  `json:"memoryMiB,omitempty"`
	// CoresPerDevice is the NeuronCores of each Neuron device.
	CoresPerDevice int64 `json:"coresPerDevice,omitempty"`
}

// RegionData is one region's zones.
type RegionData struct {
	Name  string     `json:"name"`
	Zones []ZoneData `json:"zones"`
}

// ZoneData is one zone, its zone ID and the types it offers, as indexes into
// Data.Types.
type ZoneData struct {
	Name  string `json:"name"`
	ID    string `json:"id,omitempty"`
	Types []int  `json:"types"`
}

// Encode writes d in the checked-in form: JSON with one type and one zone per
// line, so that a regeneration's diff shows what changed.
func Encode(d *Data) ([]byte, error) {
	var b bytes.Buffer
	head := func(key string, v any) error {
		j, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%q: %s,\n", key, j)
		return nil
	}
	b.WriteString("{\n")
	if err := head("source", d.Source); err != nil {
		return nil, err
	}
	if err := head("priceSource", d.PriceSource); err != nil {
		return nil, err
	}
	b.WriteString("\"types\": [\n")
	for i, t := range d.Types {
		if err := line(&b, t, i == len(d.Types)-1); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", t.Name, err)
		}
	}
	b.WriteString("],\n\"regions\": [\n")
	for i, r := range d.Regions {
		fmt.Fprintf(&b, "{\"name\": %q, \"zones\": [\n", r.Name)
		for j, z := range r.Zones {
			if err := line(&b, z, j == len(r.Zones)-1); err != nil {
				return nil, err
			}
		}
		b.WriteString("]}")
		if i < len(d.Regions)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n}\n")
	return b.Bytes(), nil
}

func line(b *bytes.Buffer, v any, last bool) error {
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(j)
	if !last {
		b.WriteString(",")
	}
	b.WriteString("\n")
	return nil
}

// Decode reads a file Encode wrote and checks that its indexes are in range.
func Decode(b []byte) (*Data, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	d := &Data{}
	if err := dec.Decode(d); err != nil {
		return nil, fmt.Errorf("reading the AWS instance-type data: %w", err)
	}
	for _, r := range d.Regions {
		for _, z := range r.Zones {
			for _, i := range z.Types {
				if i < 0 || i >= len(d.Types) {
					return nil, fmt.Errorf("reading the AWS instance-type data: zone %s lists type %d of %d", z.Name, i, len(d.Types))
				}
			}
		}
	}
	return d, nil
}

// builtin is the embedded data, decoded once.
var builtin = sync.OnceValues(func() (*Data, error) { return Decode(raw) })
