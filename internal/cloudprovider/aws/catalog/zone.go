package awscatalog

import "regexp"

// zoneName is an AWS zone name: the region ("us-west-2", "us-gov-west-1"),
// then a letter for an availability zone ("us-west-2a"), or a dash and the
// rest of a Local Zone ("us-west-2-lax-1a") or Wavelength Zone
// ("us-east-1-wl1-bos-wlz-1") name. Zone IDs ("usw2-az1") and made-up
// zones ("zone-a") do not match.
var zoneName = regexp.MustCompile(`^([a-z]{2}(?:-[a-z]+)+-[0-9]+)(?:[a-z]|-[a-z0-9]+(?:-[a-z0-9]+)*)$`)

// ZoneRegion is the region an AWS zone name belongs to, read from the name
// alone (every AWS zone name starts with its region's), and whether the
// name is one. It says nothing of whether the built-in catalog has the
// region or the zone: offline, a zone's region is all there is to go by
// when an EC2NodeClass's subnets name zones the catalog lacks.
func ZoneRegion(zone string) (string, bool) {
	m := zoneName.FindStringSubmatch(zone)
	if m == nil {
		return "", false
	}
	return m[1], true
}
