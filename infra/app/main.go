// Command app is Sandman's CDK app: it synthesizes the stack of package infra
// with cdk-nag's AwsSolutions checks. cdk.json at the repository root runs it
// (`scripts/cdk.sh synth`); settings come from the CDK context (see the
// infra.Context* keys) and the function binaries from `make build`.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/infra"
)

func main() {
	err := synth()
	jsii.Close() // stops the jsii kernel and removes its temporary directory
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandman cdk app: %v\n", err)
		os.Exit(1)
	}
}

// synth builds the app and writes the cloud assembly (to CDK_OUTDIR, which
// the CDK CLI sets).
func synth() error {
	app := awscdk.NewApp(nil)
	name, props, err := infra.PropsFromContext(app)
	if err != nil {
		return err
	}
	dir := props.FunctionsDir
	if dir == "" {
		dir = infra.DefaultFunctionsDir
	}
	if err := infra.CheckFunctionsDir(dir); err != nil {
		return err
	}
	infra.NewSandmanStack(app, name, props)
	infra.AddNagChecks(app)
	app.Synth(nil)
	return nil
}
