package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/catalog"
	awscatalog "github.com/nodewright/nodewright/internal/cloudprovider/aws/catalog"
	"github.com/nodewright/nodewright/internal/cloudprovider/kwok"
)

func catalogCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Print an instance-type catalog in the JSON form that --catalog reads",
		Long: `catalog prints the instance types, offerings and prices nodewright plans with, in the
JSON form that simulate, explain and the kwok provider read with --catalog (docs/catalog.md).
Edit it (prices from your own account, say) and pass it back with --catalog.`,
	}
	var region string
	var listRegions bool
	aws := &cobra.Command{
		Use:   "aws [--region R]",
		Short: "The built-in AWS EC2 catalog of one region (from EC2's instance data; prices: see the output's priceSource)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listRegions {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), strings.Join(awscatalog.Regions(), "\n"))
				return err
			}
			c, err := awscatalog.Region(region)
			if err != nil {
				return fmt.Errorf("--region: %w", err)
			}
			return writeCatalog(cmd.OutOrStdout(), c)
		},
	}
	aws.Flags().StringVar(&region, "region", awscatalog.DefaultRegion, "AWS region")
	aws.Flags().BoolVar(&listRegions, "list-regions", false, "list the regions the built-in catalog holds")
	kw := &cobra.Command{
		Use:   "kwok",
		Short: "The kwok provider's built-in catalog",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeCatalog(cmd.OutOrStdout(), kwok.BuiltinCatalog())
		},
	}
	cmd.AddCommand(aws, kw)
	return cmd
}

func writeCatalog(w io.Writer, c *catalog.Catalog) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}
