# Sandman's commands. `make test` and `make run` are the two a newcomer needs.
SHELL := /bin/bash
GO    ?= go
FUNCTIONS := sessions status resume pause reconnect webhook sweep publisher timer readiness channel notifier deliver checkpoint

.PHONY: test lint build clean run apikey invoke sandman smoke synth deploy bench capacity

SANDMAN_BIN := build/sandman

## run: the whole stack locally on DynamoDB Local and the local provider (Ctrl-C stops it)
run: sandman
	$(SANDMAN_BIN) run

.PHONY: stop reset
## stop: pause every sandbox of the state folder (.sandman, or SANDMAN_STATE_DIR) once make run has stopped; data kept
stop: sandman
	$(SANDMAN_BIN) stop

## reset: kill every sandbox of the state folder, then remove the folder (sessions, keys, data); make run stopped first
reset: sandman
	$(SANDMAN_BIN) reset

## apikey: print a new API key for ACCOUNT (MAX_RUNNING=N: its own running limit; ARCHIVE_AFTER=D, DELETE_AFTER=D: the account's tiers), stored hashed in the configured table
apikey: sandman
	@test -n "$(ACCOUNT)" || { echo "usage: make apikey ACCOUNT=<id>" >&2; exit 2; }
	@$(SANDMAN_BIN) apikey -account "$(ACCOUNT)" $(if $(MAX_RUNNING),-max-running "$(MAX_RUNNING)") \
		$(if $(ARCHIVE_AFTER),-archive-after "$(ARCHIVE_AFTER)") $(if $(DELETE_AFTER),-delete-after "$(DELETE_AFTER)")

## invoke: run one function's handler once on an event, e.g. make invoke FN=status EVENT=events/api/status.json
invoke: sandman
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<function> EVENT=<file>" >&2; exit 2; }
	@$(SANDMAN_BIN) invoke -fn "$(FN)" -event "$(EVENT)"

## smoke: start the local stack on a free port and drive a real session through its lifecycle over HTTP
smoke:
	bash scripts/smoke.sh

# The local binary: the local stack, its commands, and the local sandboxes' process.
sandman:
	@mkdir -p build
	$(GO) build -o $(SANDMAN_BIN) ./internal/cmd/sandman

## test: every test, against a throwaway DynamoDB Local, with -race
test:
	bash scripts/test.sh

## lint: gofmt, go vet, staticcheck, go mod tidy diff
lint:
	bash scripts/lint.sh

## build: one linux/arm64 `bootstrap` per Lambda function under build/lambda/<name>/
build:
	@for fn in $(FUNCTIONS); do \
	  echo "build $$fn"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o build/lambda/$$fn/bootstrap ./functions/$$fn || exit 1; \
	done

## bench: benchmarks and the cost report into bench-results/ (copied to docs/BENCH.md)
bench:
	bash scripts/bench.sh

## capacity: the capacity model (docs/CAPACITY.md): each key family against DynamoDB's limits at the target (ARGS="-scale 10": what breaks first)
capacity:
	bash scripts/capacity.sh $(ARGS)

## synth: synthesize the CDK stack offline into cdk.out (needs Node; no AWS credentials)
synth: build
	bash scripts/cdk.sh synth --quiet

## deploy: deploy the stack to the AWS account of your credentials (see docs/DEPLOY.md)
deploy: build
	bash scripts/cdk.sh deploy

clean:
	rm -rf build cdk.out
