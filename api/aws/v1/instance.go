package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// BlockDeviceMapping attaches one disk to the instance.
type BlockDeviceMapping struct {
	// DeviceName is the device the disk appears as, e.g. /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS describes the EBS volume created for the device at launch.
	// +kubebuilder:validation:XValidation:message="snapshotID or volumeSize must be defined",rule="has(self.snapshotID) || has(self.volumeSize)"
	// +kubebuilder:validation:XValidation:message="snapshotID must be set when volumeInitializationRate is set",rule="!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')"
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume marks the disk the kubelet's root directory is on, whose
	// size is the node's ephemeral storage.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume created at launch, from a snapshot or empty.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume when the instance terminates.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume (not settable for volumes made from a
	// snapshot, which inherit the snapshot's encryption).
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS provisions I/O operations per second for gp3, io1 and io2 volumes.
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the KMS key (ID, alias or ARN) that encrypts the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the EBS snapshot the volume is created from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput provisions MiB/s for a gp3 volume.
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeInitializationRate is the rate, in MiB/s, at which a volume made
	// from a snapshot is filled; it needs snapshotID.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
	// VolumeSize is the volume's size in Gi, G, Ti or T, at most 64T (58Ti).
	// Either it or snapshotID is required.
	// +kubebuilder:validation:Pattern="^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum=standard;io1;io2;gp2;sc1;st1;gp3
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// InstanceStorePolicy says how local instance store disks are used.
// +kubebuilder:validation:Enum=RAID0
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 joins every local NVMe disk into one RAID-0 array
// that holds the kubelet's and container runtime's state, so the node's
// ephemeral storage is the instance store rather than the root volume.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// MetadataOptions configure the instance metadata service (IMDS).
type MetadataOptions struct {
	// HTTPEndpoint turns IMDS on or off.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 turns IMDS's IPv6 address on or off.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is how many network hops IMDS's token
	// responses may travel; 1 keeps them from reaching pods on an overlay
	// network.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens is "required" to allow only token-based requests (IMDSv2),
	// "optional" to also allow IMDSv1.
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum=required;optional
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// NetworkInterface is one network interface attached at launch.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is on.
	// +kubebuilder:validation:Minimum=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's position on its card; 0 on card 0 is
	// the primary interface.
	// +kubebuilder:validation:Minimum=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is "interface" for an ordinary ENI, "efa-only" for an
	// Elastic Fabric Adapter without IP addresses.
	// +kubebuilder:validation:Enum=interface;efa-only
	// +required
	InterfaceType string `json:"interfaceType"`
}

// ConnectionTracking sets idle timeouts, in seconds, of tracked connections.
// Unset timeouts keep EC2's defaults.
type ConnectionTracking struct {
	// TCPEstablishedTimeout is the idle timeout of established TCP
	// connections.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout is the idle timeout of UDP flows that have seen more
	// than one request and response.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout is the idle timeout of other UDP flows.
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions set processor features of the instances.
type CPUOptions struct {
	// NestedVirtualization turns nested virtualization on or off; when on,
	// only instance types that support it are used.
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}
