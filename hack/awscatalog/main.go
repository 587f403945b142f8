// Command awscatalog generates the data file of nodewright's built-in AWS
// instance-type catalog (internal/cloudprovider/aws/catalog/catalog.json)
// from moto's copy of EC2's instance-type data, found with python3, and the
// on-demand price table of the Karpenter compatibility data.
//
//	go generate ./internal/cloudprovider/aws/catalog
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodewright/nodewright/hack/awscatalog/facts"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/testcluster"
)

func main() {
	out := flag.String("o", awscatalog.DataFile, "file to write")
	prices := flag.String("prices", "", "on-demand price table (default: aws/ondemand-prices.json of the compatibility data)")
	flag.Parse()
	if err := run(*out, *prices); err != nil {
		fmt.Fprintln(os.Stderr, "awscatalog:", err)
		os.Exit(1)
	}
}

func run(out, prices string) error {
	if prices == "" {
		compat, err := testcluster.CompatDir()
		if err != nil {
			return err
		}
		prices = filepath.Join(compat, "aws", "ondemand-prices.json")
	}
	src, err := facts.Find(prices)
	if err != nil {
		return err
	}
	data, err := facts.Build(src)
	if err != nil {
		return err
	}
	b, err := awscatalog.Encode(data)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
