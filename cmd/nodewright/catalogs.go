package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/nodewright/nodewright/internal/catalog"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
)

// catalogFlags choose the instance types that simulate and explain -f
// resolve NodePools against: --catalog replaces the built-in catalogs of
// every NodeClass kind, --region picks the built-in AWS region.
type catalogFlags struct {
	file   string
	region string
}

func (f *catalogFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.file, "catalog", "", "instance-type catalog `FILE`: JSON as 'nodewright catalog' prints it (docs/catalog.md); it replaces the built-in catalog of KWOKNodeClasses and EC2NodeClasses")
	fl.StringVar(&f.region, "region", "", "AWS `REGION` whose built-in catalog EC2NodeClasses launch from (default: the region of the EC2NodeClasses' subnet zones when they all name one, else "+awscatalog.DefaultRegion+"); 'nodewright catalog aws --list-regions' lists them")
}

// load returns the kwok and AWS catalogs to use; nil means the built-in one
// (for AWS, that of the region the EC2NodeClasses' subnets are in, else
// us-east-1, read only when an EC2NodeClass needs it: offline.New picks it).
func (f *catalogFlags) load() (kwokCat, awsCat *catalog.Catalog, err error) {
	if f.file != "" {
		if f.region != "" {
			return nil, nil, fmt.Errorf("--region picks a built-in AWS catalog and --catalog replaces it; give one of the two")
		}
		file, err := os.Open(f.file)
		if err != nil {
			return nil, nil, fmt.Errorf("--catalog: %w", err)
		}
		defer file.Close()
		c, err := catalog.Read(file)
		if err != nil {
			return nil, nil, fmt.Errorf("--catalog %s: %w", f.file, err)
		}
		return c, c, nil
	}
	if f.region == "" {
		return nil, nil, nil
	}
	awsCat, err = awscatalog.Region(f.region)
	if err != nil {
		return nil, nil, fmt.Errorf("--region: %w", err)
	}
	return nil, awsCat, nil
}
