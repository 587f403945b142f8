package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/catalog"
	awsprovider "github.com/nodewright/nodewright/internal/cloudprovider/aws"
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
	var region, endpoint string
	var listRegions, live bool
	aws := &cobra.Command{
		Use:   "aws [--region R] [--live [--endpoint URL]]",
		Short: "The AWS EC2 catalog of one region: built in (from EC2's instance data), or --live from your account",
		Long: `aws prints one region's EC2 instance types, zones and prices. By default it prints the built-in
catalog; --live asks EC2 in your account (credentials and region from the AWS SDK's standard chain,
--region overriding the region). Prices are the built-in table until the Pricing API is read; the
output's priceSource and spotPriceModel say so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listRegions {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), strings.Join(awscatalog.Regions(), "\n"))
				return err
			}
			if endpoint != "" && !live {
				return fmt.Errorf("--endpoint is for --live; add --live or drop --endpoint")
			}
			if live {
				c, err := liveAWSCatalog(cmd.Context(), cmd.Flags().Changed("region"), region, endpoint)
				if err != nil {
					return err
				}
				return writeCatalog(cmd.OutOrStdout(), c)
			}
			c, err := awscatalog.Region(region)
			if err != nil {
				return fmt.Errorf("--region: %w", err)
			}
			return writeCatalog(cmd.OutOrStdout(), c)
		},
	}
	aws.Flags().StringVar(&region, "region", awscatalog.DefaultRegion, "AWS `REGION`")
	aws.Flags().BoolVar(&listRegions, "list-regions", false, "list the regions the built-in catalog holds")
	aws.Flags().BoolVar(&live, "live", false, "ask EC2 in your account instead of printing the built-in catalog")
	aws.Flags().StringVar(&endpoint, "endpoint", "", "with --live: the EC2 endpoint `URL` (a private endpoint, or a local EC2 API for tests)")
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

// liveAWSCatalog discovers a region's catalog from EC2 with the SDK's
// standard configuration chain.
func liveAWSCatalog(ctx context.Context, regionSet bool, region, endpoint string) (*catalog.Catalog, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if regionSet {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--live: loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = region
	}
	client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		if endpoint != "" {
			o.BaseEndpoint = &endpoint
		}
	})
	c, err := awsprovider.Discover(ctx, client, cfg.Region, awsprovider.BuiltinPrices())
	if err != nil {
		return nil, fmt.Errorf("--live: %w", err)
	}
	return c, nil
}

func writeCatalog(w io.Writer, c *catalog.Catalog) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}
