package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClassStatus is what the class's selectors resolved to the last time
// the provider looked, and whether the class is ready to launch with.
type EC2NodeClassStatus struct {
	// Subnets are the subnets the subnet selector terms chose.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups are the security groups the selector terms chose.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations are the reservations the selector terms chose.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs are the images the AMI selector terms chose, each with the
	// instance types it can run on.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the instance profile in use: the one named in the
	// spec, or the one created for spec.role.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions say whether each part resolved and whether the class is
	// Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a subnet a class may launch in.
type Subnet struct {
	// ID is the subnet's ID.
	// +required
	ID string `json:"id"`
	// Zone is the subnet's availability zone name, e.g. us-east-1a.
	// +required
	Zone string `json:"zone"`
	// ZoneID is the zone's account-independent ID, e.g. use1-az1.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a security group instances of a class get.
type SecurityGroup struct {
	// ID is the group's ID.
	// +required
	ID string `json:"id"`
	// Name is the group's name.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a machine image a class may launch, with the instance types it fits.
type AMI struct {
	// ID is the image's ID.
	// +required
	ID string `json:"id"`
	// Name is the image's name.
	// +optional
	Name string `json:"name,omitempty"`
	// Deprecated says whether EC2 has deprecated the image.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Requirements are the instance type labels the image fits (its
	// architecture, GPU or not, ...).
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// CapacityReservation is a capacity reservation a class may launch into.
type CapacityReservation struct {
	// ID is the reservation's ID.
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// AvailabilityZone is the zone the reserved capacity is in.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// InstanceType is the instance type reserved.
	// +required
	InstanceType string `json:"instanceType"`
	// InstanceMatchCriteria is "open" if any matching launch uses the
	// reservation, "targeted" if only launches naming it do.
	// +kubebuilder:validation:Enum=open;targeted
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// ReservationType is "default" for an on-demand capacity reservation or
	// "capacity-block" for a capacity block.
	// +kubebuilder:validation:Enum=default;capacity-block
	// +kubebuilder:default=default
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// State is "expiring" once a capacity block is within EC2's reclaim
	// window before its end, "active" before.
	// +kubebuilder:validation:Enum=active;expiring
	// +kubebuilder:default=active
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
	// EndTime is when the reservation ends and its capacity is released.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Interruptible says whether EC2 may reclaim the reserved capacity.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
}

// CapacityReservationType is the kind of a capacity reservation.
type CapacityReservationType string

// The kinds of capacity reservation.
const (
	CapacityReservationTypeDefault       CapacityReservationType = "default"
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState is where a capacity reservation is in its life.
type CapacityReservationState string

// The states of a capacity reservation.
const (
	CapacityReservationStateActive   CapacityReservationState = "active"
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)
